package load

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// rssBound is the most the supervisor may hold resident with default
// settings while the attacks below run (README, SECURITY.md).
const rssBound = 512 << 20

// TestSupervisorRSSUnderAttack runs the client and sandbox attacks that
// once grew the supervisor without bound, all at once, against
// `execfarm serve` with default settings (and a token, and a Kubernetes
// API server): 60 parallel 5 MiB pod lists through the host proxy from one
// sandbox; an execution printing 34 MB per stream past the retention
// budget; an execution keeping 2 × 64 MiB read by 10 parallel GetExecution
// loops, one Execute with 64 MiB per stream, and 3 MiB requests queued
// until refused; 3000 unauthenticated connections from 30 addresses each
// holding a health Watch. The supervisor's RSS, sampled every 25 ms, stays
// under rssBound, and another client's (on a connection of its own)
// executions run and their results, one from before the attacks
// included, stay readable.
func TestSupervisorRSSUnderAttack(t *testing.T) {
	requireRoot(t)
	api := listAPI(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	tokenFile := filepath.Join(dir, "token")
	const token = "load-attack-token-0123456789abcdef"
	writeFile(t, tokenFile, token+"\n")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: "api-token"}
contexts:
- name: fake-ctx
  context: {cluster: fake, user: u}
current-context: fake-ctx
`, api.URL))
	port := freePort(t)
	flags := []string{"--tcp", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--token-file", tokenFile}
	s := startServer(t, 1, append(flags, "--kubeconfig", kubeconfig)...)
	pid := s.proc.Pid()
	idle, _ := rssBytes(pid)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := s.client
	// The victim is another client, on a connection of its own.
	vconn, err := clientConfig("", flags).Dial()
	if err != nil {
		t.Fatalf("dial the victim's connection: %v", err)
	}
	defer vconn.Close()
	victim := sandboxv1.NewSandboxServiceClient(vconn)

	// The victim's result from before the attacks.
	before, err := victim.Execute(ctx, shell("echo before-the-attacks", 0))
	if err != nil || before.GetOutput() != "before-the-attacks\n" {
		t.Fatalf("victim before: %v %v", err, before)
	}
	stopRSS := rssSampler(pid, 25*time.Millisecond)
	var wg sync.WaitGroup
	var failures sync.Map
	fail := func(what string, err error) { failures.Store(what, err) }
	run := func(what string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				fail(what, err)
			}
		}()
	}
	// Finding 9: 3000 unauthenticated connections with health Watches.
	var watching atomic.Int64
	attackCtx, stopAttack := context.WithCancel(ctx)
	defer stopAttack()
	for a := range 30 {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+a))}
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDisableRetry(), grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
						return (&net.Dialer{LocalAddr: local}).DialContext(ctx, "tcp", addr)
					}))
				if err != nil {
					return
				}
				defer conn.Close()
				w, err := healthpb.NewHealthClient(conn).Watch(attackCtx, &healthpb.HealthCheckRequest{})
				if err != nil {
					return
				}
				if _, err := w.Recv(); err != nil {
					return
				}
				watching.Add(1)
				defer watching.Add(-1)
				for {
					if _, err := w.Recv(); err != nil {
						return
					}
				}
			}()
		}
	}
	// Finding 3: 60 parallel 5 MiB lists from one sandbox.
	run("proxy lists", func() error {
		r, err := c.Execute(ctx, python(parallelLists, 120_000))
		if err != nil {
			return err
		}
		if !strings.Contains(r.GetOutput(), "lists: 60 complete of 60") {
			return fmt.Errorf("%s %s %s", r.GetState(), r.GetOutput(), r.GetErrorOutput())
		}
		return nil
	})
	// Finding 7: 34 MB per stream, past the retention budget.
	run("34 MB per stream", func() error {
		req := shell("head -c 34000000 /dev/zero | tr '\\0' a; head -c 34000000 /dev/zero | tr '\\0' b >&2", 120_000)
		req.Limits.MaxOutputBytes = 40 << 20
		_, err := c.Execute(ctx, req)
		return err
	})
	// Finding 8: one Execute with 64 MiB per stream, and 10 parallel
	// GetExecution loops on it.
	run("64 MiB per stream", func() error {
		req := shell("head -c 67108864 /dev/zero | tr '\\0' a; head -c 67108864 /dev/zero | tr '\\0' b >&2", 120_000)
		req.Limits.MaxOutputBytes = 64 << 20
		a, err := c.ExecuteAsync(ctx, req)
		if err != nil {
			return err
		}
		var readers sync.WaitGroup
		for range 10 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				var off, errOff int64
				for {
					g, err := c.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: off > 0,
						OutputOffset: off, ErrorOutputOffset: errOff})
					if err != nil {
						fail("GetExecution", err)
						return
					}
					off, errOff = g.GetOutputLength(), g.GetErrorOutputLength()
					if g.GetResult() != nil && errOff >= g.GetResult().GetOutcome().GetStderrBytes() {
						return
					}
				}
			}()
		}
		readers.Wait()
		big := shell("head -c 67108864 /dev/zero | tr '\\0' c; head -c 67108864 /dev/zero | tr '\\0' d >&2", 120_000)
		big.Limits.MaxOutputBytes = 64 << 20
		_, err = c.Execute(ctx, big)
		return err
	})
	// Finding 8: 3 MiB requests queued until refused.
	run("queued requests", func() error {
		code := "# " + strings.Repeat("q", 3<<20) + "\ntrue"
		var ids []string
		for range 100 {
			r, err := c.ExecuteAsync(ctx, shell(code[:3<<20-1], 0))
			if err != nil {
				break
			}
			ids = append(ids, r.GetExecutionId())
		}
		if len(ids) == 100 {
			return fmt.Errorf("100 requests of 3 MiB queued: no byte budget")
		}
		for _, id := range ids {
			_, _ = c.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id})
		}
		return nil
	})
	// The victim meanwhile: its executions run, and its earlier result
	// stays readable.
	for i := range 5 {
		r, err := victim.Execute(ctx, shell(fmt.Sprintf("echo victim-%d", i), 0))
		if err != nil || r.GetOutput() != fmt.Sprintf("victim-%d\n", i) {
			t.Errorf("victim execution %d during the attacks: %v %v", i, err, r)
		}
	}
	held := watching.Load()
	stopAttack()
	wg.Wait()
	peak, samples, err := stopRSS()
	if err != nil {
		t.Fatalf("sample RSS: %v", err)
	}
	failures.Range(func(k, v any) bool {
		t.Errorf("%s: %v", k, v)
		return true
	})
	g, err := victim.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: before.GetOutcome().GetExecutionId()})
	if err != nil || g.GetOutput() != "before-the-attacks\n" || g.GetResult() == nil {
		t.Errorf("the victim's result from before the attacks: %v %v", err, g)
	}
	t.Logf("supervisor RSS: idle %s, peak %s over %d samples (bound %s); %d unauthenticated health watches held at the end", mib(idle), mib(peak), samples, mib(rssBound), held)
	if peak > rssBound {
		t.Errorf("supervisor RSS peaked at %s, over the bound %s\n%s", mib(peak), mib(rssBound), s.logText())
	}
}

// parallelLists is the sandbox side of the proxy attack.
const parallelLists = `
import http.client, threading
N, SIZE = 60, 5 << 20
done, bad = [], []
lock = threading.Lock()
def fetch(i):
    try:
        c = http.client.HTTPConnection("127.0.0.1", 8001, timeout=100)
        c.request("GET", "/api/v1/namespaces/default/pods?labelSelector=big%3Dload")
        r = c.getresponse()
        n = 0
        while True:
            b = r.read(65536)
            if not b:
                break
            n += len(b)
        with lock:
            (done if r.status == 200 and n == SIZE else bad).append((i, r.status, n))
    except Exception as e:
        with lock:
            bad.append((i, repr(e)))
threads = [threading.Thread(target=fetch, args=(i,)) for i in range(N)]
for t in threads: t.start()
for t in threads: t.join()
print(f"lists: {len(done)} complete of {N}")
print(bad[:3])
`

// listAPI is a Kubernetes API server answering every list with 5 MiB.
func listAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		pad := []byte(strings.Repeat("x", 32<<10))
		for left := 5 << 20; left > 0; left -= len(pad) {
			if _, err := w.Write(pad[:min(left, len(pad))]); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func shell(code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	return &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code}, Runtime: sandboxv1.Runtime_RUNTIME_SHELL,
		Limits: &sandboxv1.ResourceLimits{TimeoutMs: timeoutMs}}
}

func python(code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	r := shell(code, timeoutMs)
	r.Runtime = sandboxv1.Runtime_RUNTIME_PYTHON
	return r
}

func writeFile(t *testing.T, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
