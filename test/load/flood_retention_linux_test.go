package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// stdinFlood fills sandboxes × execs session execs with standard input:
// each opens its stdin and gets two 1 MiB writes (the second would wait);
// the first two execs of the first sandbox run and keep 64 MiB of stdout
// each, the others stay pending behind --max-concurrent 2. It returns how
// many writes were refused RESOURCE_EXHAUSTED (the stdin bounds).
func stdinFlood(ctx context.Context, t *testing.T, s *server, sandboxes, execs int, memory int64) (refused int64) {
	t.Helper()
	c := s.sessions()
	ids := make([]string, sandboxes)
	var cwg sync.WaitGroup
	begin := time.Now()
	for i := range ids {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			req := &execfarmv1.CreateSandboxRequest{}
			if memory > 0 {
				req.Limits = &sandboxv1.ResourceLimits{MaxMemoryBytes: memory}
			}
			sb, err := c.CreateSandbox(ctx, req)
			if err != nil {
				t.Errorf("CreateSandbox: %v", err)
				return
			}
			ids[i] = sb.GetSandboxId()
		}()
	}
	cwg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d sandboxes created in %s", sandboxes, time.Since(begin).Round(time.Millisecond))
	defer func() { t.Logf("stdin flood done in %s", time.Since(begin).Round(time.Millisecond)) }()
	mib1 := make([]byte, 1<<20)
	var wg sync.WaitGroup
	var refusedN atomic.Int64
	var failed sync.Map
	for si, id := range ids {
		// A connection per sandbox: one carries at most 128 calls.
		conn, err := clientConfig(filepath.Join(s.dir, "execfarm.sock"), nil).Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c := execfarmv1.NewSessionServiceClient(conn)
		for ei := range execs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code := "sleep 120"
				req := &execfarmv1.ExecRequest{SandboxId: id, KeepStdinOpen: true, Code: code}
				if si == 0 && ei < 2 {
					out := int64(64 << 20)
					req.Code, req.MaxOutputBytes = "head -c 67108864 /dev/zero | tr '\\0' o; sleep 120", &out
				}
				st, err := c.Exec(ctx, req)
				if err != nil {
					failed.Store(fmt.Sprint(si, ei), err)
					return
				}
				m, err := st.Recv()
				if err != nil {
					failed.Store(fmt.Sprint(si, ei), err)
					return
				}
				eid := m.GetExecutionId()
				for range 2 {
					wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := c.WriteStdin(wctx, &execfarmv1.WriteStdinRequest{ExecutionId: eid, Data: mib1})
					cancel()
					if status.Code(err) == codes.ResourceExhausted {
						refusedN.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	failed.Range(func(k, v any) bool {
		t.Errorf("exec %v: %v", k, v)
		return true
	})
	for _, id := range ids {
		if _, err := c.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: id}); err != nil {
			t.Errorf("DeleteSandbox: %v", err)
		}
	}
	return refusedN.Load()
}

// TestStdinFloodRSS: 16 session sandboxes × 16 execs with their stdin
// open (254 pending behind --max-concurrent 2, the 2 running keeping
// 64 MiB of stdout each), each given 1 MiB and then another: the
// supervisor's VmHWM stays under the bound, and writes past the
// sandbox's 4 MiB of unread stdin are refused RESOURCE_EXHAUSTED. Before,
// each exec held 1 MiB buffered and 1 MiB waiting: 725-735 MB.
func TestStdinFloodRSS(t *testing.T) {
	requireRoot(t)
	started := time.Now()
	s := startServer(t, 0, "--max-concurrent", "2", "--max-sandboxes", "16", "--max-sandboxes-per-principal", "16")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	refused := stdinFlood(ctx, t, s, 16, 16, 0)
	if refused == 0 {
		t.Errorf("no write refused: 512 MiB of stdin fit the bounds")
	}
	t.Logf("%d of %d writes refused RESOURCE_EXHAUSTED", refused, 2*16*16)
	checkHWM(t, s, "the flood, "+time.Since(started).Round(time.Millisecond).String())
}

// consoleFlood runs n goja programs of 5000 console lines of 99 "é"
// (1 MB each) with parallel clients.
func consoleFlood(ctx context.Context, t *testing.T, c sandboxv1.SandboxServiceClient, n, parallel int, memory int64) {
	t.Helper()
	code := `for (let i = 0; i < 5000; i++) console.log("é".repeat(99)); throw new Error("x".repeat(16000))`
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				r, err := c.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code},
					Runtime: sandboxv1.Runtime_RUNTIME_GOJA, Limits: &sandboxv1.ResourceLimits{TimeoutMs: 60_000, MaxMemoryBytes: memory}})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if !strings.HasPrefix(r.GetOutput(), "é") {
					firstErr.CompareAndSwap(nil, fmt.Errorf("output %.40q, error %.80q", r.GetOutput(), r.GetError()))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("console flood: %v", err)
	}
}

// TestConsoleFloodRSS: 400 goja runs each keeping 5000 console lines of
// 1 MB and a 16 000-character thrown error: the retention budget cuts
// their lines and errors like output, the supervisor's VmHWM stays
// under the bound, and the latest run is still readable. Before, lines
// were kept outside the budget: 637 MB.
func TestConsoleFloodRSS(t *testing.T) {
	requireRoot(t)
	started := time.Now()
	s := startServer(t, 1, "--max-concurrent", "8")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	consoleFlood(ctx, t, s.client, 400, 8, 0)
	checkHWM(t, s, "the flood, "+time.Since(started).Round(time.Millisecond).String())
}

// TestNoSandboxOOMInMemoryCgroup places the supervisor (and with it the
// sandboxes, whose cgroups nest under its own v1 memory cgroup's
// ancestor) in a 1200 MiB memory cgroup and runs the stdin and console
// floods while another client's executions stay within their 256 MiB
// limit (each allocates 200 MiB): none is reported OOM-killed, the
// default memory budget keeps the supervisor's 512 MiB (600 MiB of 1200
// MiB for sandboxes), and the supervisor's VmHWM stays under the bound.
func TestNoSandboxOOMInMemoryCgroup(t *testing.T) {
	requireRoot(t)
	const memRoot = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(memRoot, "memory.limit_in_bytes")); err != nil {
		t.Skipf("no cgroup v1 memory controller at %s", memRoot)
	}
	started := time.Now()
	// The limited cgroup, under the suite's parent (removed at teardown):
	// the supervisor in sup/, its sandboxes in box/.
	limited := filepath.Join(cgParent, "oom")
	dir := filepath.Join(memRoot, limited)
	for _, d := range []string{dir, filepath.Join(dir, "sup")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(dir, "sup")) })
	writeFile(t, filepath.Join(dir, "memory.limit_in_bytes"), strconv.Itoa(1200<<20))
	procs := filepath.Join(dir, "sup", "cgroup.procs")
	s := startServerVia(t, 2, []string{"/bin/sh", "-c", `echo $$ > "$1" && shift && exec "$@"`, "sh", procs},
		"--max-concurrent", "4", "--max-sandboxes", "8", "--max-sandboxes-per-principal", "8", "--cgroup-parent", filepath.Join(limited, "box"))
	h, err := s.client.HealthCheck(context.Background(), &sandboxv1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if b := h.GetMemoryBudgetBytes(); b > 1200<<20-512<<20 {
		t.Errorf("memory budget %s in a 1200 MiB cgroup leaves the supervisor less than 512 MiB", mib(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	// Within the default budget, 1200 MiB less 600 MiB (the supervisor's
	// 512 MiB and more): what does not fit waits.
	go func() { defer wg.Done(); stdinFlood(ctx, t, s, 2, 16, 64<<20) }()
	go func() { defer wg.Done(); consoleFlood(ctx, t, s.client, 100, 2, 128<<20) }()
	// The victim: executions within their own limit while the floods run.
	floodsDone := doneFloods(&wg)
	victimDone := make(chan struct{})
	var oom, ran atomic.Int64
	go func() {
		defer close(victimDone)
		for ctx.Err() == nil {
			r, err := s.client.Execute(ctx, &sandboxv1.ExecuteRequest{
				Source:  &sandboxv1.ExecuteRequest_Code{Code: "b = bytearray(200 << 20)\nprint(len(b))"},
				Runtime: sandboxv1.Runtime_RUNTIME_PYTHON,
				Limits:  &sandboxv1.ResourceLimits{TimeoutMs: 60_000, MaxMemoryBytes: 256 << 20}})
			if err != nil {
				t.Errorf("victim: %v", err)
				return
			}
			ran.Add(1)
			if o := r.GetOutcome(); o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY || o.GetUsage().GetOomKills() > 0 {
				oom.Add(1)
				t.Errorf("victim within its 256 MiB limit reported OOM-killed: %v", r)
			}
			select {
			case <-floodsDone:
				return
			default:
			}
		}
	}()
	wg.Wait()
	<-victimDone
	if ran.Load() == 0 {
		t.Error("the victim never ran")
	}
	t.Logf("victim ran %d executions, %d reported OOM-killed", ran.Load(), oom.Load())
	checkHWM(t, s, "the flood, "+time.Since(started).Round(time.Millisecond).String())
}

// doneFloods returns a channel closed once wg is done.
func doneFloods(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	return c
}
