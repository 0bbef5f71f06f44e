package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/test/testbin"
)

// samples is how many timed runs each latency series takes.
const samples = 200

// poolSizes are the warm-pool sizes the memory benchmark runs with, as
// sub-benchmarks "pool=N".
var poolSizes = []int{0, 4}

// poolSetup is a warm-pool configuration of the latency and throughput
// benchmarks: its size, and how many executions a sandbox serves.
type poolSetup struct{ size, reuse int }

func (p poolSetup) String() string {
	if p.reuse > 1 {
		return fmt.Sprintf("pool=%d,reuse=%d", p.size, p.reuse)
	}
	return fmt.Sprintf("pool=%d", p.size)
}

// poolSetups: no pool, a pool of single-use sandboxes, a pool of reused
// ones (--sandbox-reuse 1000).
var poolSetups = []poolSetup{{0, 1}, {4, 1}, {4, 1000}}

// bwrapArgv is the bare-sandbox baseline: Debian's bubblewrap with every
// namespace and a read-only /usr, running /bin/true.
var bwrapArgv = []string{"bwrap", "--unshare-all", "--die-with-parent",
	"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
	"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "/bin/true"}

// haveBwrap reports whether bwrap runs here; the bwrap rows are left out
// (and say why) when it does not.
var haveBwrap = sync.OnceValue(func() error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return fmt.Errorf("bwrap not installed (apt-get install bubblewrap): %w", err)
	}
	if out, err := exec.Command(bwrapArgv[0], bwrapArgv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("bwrap /bin/true: %w: %s", err, out)
	}
	return nil
})

type series struct {
	name string
	d    []time.Duration
}

func (s series) pct(p float64) time.Duration {
	d := slices.Clone(s.d)
	slices.Sort(d)
	return d[int(p*float64(len(d)-1))]
}

// binaries builds execfarm, execfarm-worker and execfarm-goja into a 0755 temporary
// directory (sandbox root, an unprivileged host uid, must reach the
// worker) and returns it. Benchmarks need root.
func binaries(b *testing.B) string {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("benchmarks need root (namespaces, cgroups)")
	}
	dir, err := os.MkdirTemp("", "execfarm-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := testbin.Build(dir, append([]string{"execfarm"}, testbin.Sandbox...)...); err != nil {
		b.Fatal(err)
	}
	return dir
}

// embedded starts an in-process supervisor with maxConcurrent slots and
// the warm pool pool, and returns a client; it stops when the benchmark
// ends.
func embedded(b *testing.B, dir string, maxConcurrent int, pool poolSetup) sandboxv1.SandboxServiceClient {
	b.Helper()
	client, stop := startEmbedded(b, dir, maxConcurrent, pool, "")
	b.Cleanup(stop)
	return client
}

// startEmbedded is embedded with the stop left to the caller, and the
// sandboxes' cgroup parent cgParent ("" = the embedded supervisor's
// default): stop closes the client's connection and stops the supervisor
// (which removes its sandboxes), and may be called once.
func startEmbedded(b *testing.B, dir string, maxConcurrent int, pool poolSetup, cgParent string) (sandboxv1.SandboxServiceClient, func()) {
	b.Helper()
	cfg := supervisor.Config{MaxConcurrent: maxConcurrent, WarmPool: pool.size, SandboxReuse: pool.reuse,
		// Warnings only: a line per execution would bury the tables.
		Logger: hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: hclog.Warn})}
	cfg.Sandbox.Cgroup.Parent = cgParent
	cfg.Sandbox.WorkerBinary = filepath.Join(dir, "execfarm-worker")
	tc, stopSupervisor, err := supervisor.Embedded(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := tc.Dial()
	if err != nil {
		_ = stopSupervisor()
		b.Fatal(err)
	}
	return sandboxv1.NewSandboxServiceClient(conn), func() {
		conn.Close()
		if err := stopSupervisor(); err != nil {
			b.Errorf("stop supervisor: %v", err)
		}
	}
}

// timeExec times samples runs of a bare fork+exec+wait of argv from Go.
// The exit status is ignored: the worker without a config exits 2 at once.
func timeExec(name string, argv ...string) series {
	s := series{name: name}
	for range samples {
		t0 := time.Now()
		_ = exec.Command(argv[0], argv[1:]...).Run()
		s.d = append(s.d, time.Since(t0))
	}
	return s
}

func codeReq(rt sandboxv1.Runtime, code string) *sandboxv1.ExecuteRequest {
	return &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code}, Runtime: rt}
}

// timeExecute times samples Execute calls of code (after 5 untimed). With
// a warm pool of pool sandboxes, each call starts once the pool is full
// again (HealthCheck), so that every timed execution takes a warm sandbox
// and no refill competes with it: the latency a warm pool gives, not the
// throughput of its refills (BenchmarkThroughput measures that).
func timeExecute(b *testing.B, client sandboxv1.SandboxServiceClient, pool int, name string, rt sandboxv1.Runtime, code string) series {
	s := series{name: name}
	req := codeReq(rt, code)
	for i := range samples + 5 {
		if pool > 0 {
			waitPoolFull(b, client, pool)
		}
		t0 := time.Now()
		resp, err := client.Execute(context.Background(), req)
		d := time.Since(t0)
		if err != nil || !resp.GetSuccess() {
			b.Fatalf("%s: err %v resp %v", name, err, resp)
		}
		if i >= 5 {
			s.d = append(s.d, d)
		}
	}
	return s
}

// waitPoolFull polls HealthCheck until the warm pool holds size ready
// sandboxes (10 s at most).
func waitPoolFull(b *testing.B, client sandboxv1.SandboxServiceClient, size int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := client.HealthCheck(context.Background(), &sandboxv1.HealthCheckRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if int(h.GetWarmPoolReady()) >= size {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("warm pool not refilled in 10 s: %d of %d ready", h.GetWarmPoolReady(), size)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

// ratio formats a/base as "N.Nx", or "-" without a base.
func ratio(a, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3gx", a/base)
}
