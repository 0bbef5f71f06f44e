package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/test/testbin"
)

// startupUIDBase is the first host uid of the sandboxes this file starts
// without a supervisor: a window of its own, apart from the embedded
// supervisors' ([2^30, 2^31)) and the integration suite's.
const startupUIDBase = 3 << 30

// startupSpec is the default sandbox (limits.Default()).
var startupSpec = sandbox.Spec{
	Limits:         cgroup.Limits{MemoryMaxBytes: 512 << 20, PidsMax: 256, CPUQuotaMicros: 100_000},
	WorkspaceBytes: 64 << 20,
}

// startupRun is one sandbox's start-up: the supervisor's phases, then the
// worker's (which run within the supervisor's handshake), then destroy.
type startupRun struct {
	total, destroy time.Duration
	phases         []sandbox.Phase
}

// busyTime is the CPU time all CPUs of the host have spent not idle since
// boot, from /proc/stat (user, nice, system, irq, softirq, steal; in
// USER_HZ ticks). A sandbox's cost is spread over the supervisor, the
// worker, its runtime processes and kernel threads (namespace and cgroup
// teardown), so only a host-wide count sees all of it.
func busyTime(tb testing.TB) time.Duration {
	tb.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		tb.Fatalf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 || i == 7 { // idle, iowait, steal
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("/proc/stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// startSandboxes starts and destroys n sandboxes one at a time, with the
// binaries in dir, and returns their timings.
func startSandboxes(tb testing.TB, dir string, n int) []startupRun {
	tb.Helper()
	state, err := os.MkdirTemp("", "efb-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(state) })
	cfg := &sandbox.Config{
		WorkerBinary: filepath.Join(dir, "execfarm-worker"),
		StateDir:     state,
		IDs:          sandbox.NewIDPool(startupUIDBase, 0, 4),
		Cgroup:       cgroup.Config{Parent: fmt.Sprintf("execfarm-bench-%d", os.Getpid())},
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cgroup.RemoveParent(cfg.Cgroup) })
	ctx := context.Background()
	var out []startupRun
	for range n {
		t0 := time.Now()
		sb, err := sandbox.Start(ctx, cfg, startupSpec)
		if err != nil {
			tb.Fatal(err)
		}
		run := startupRun{total: time.Since(t0), phases: sb.StartPhases()}
		wp, err := sb.WorkerPhases(ctx)
		if err != nil {
			sb.Close()
			tb.Fatal(err)
		}
		for _, p := range wp {
			p.Name = "  worker " + p.Name
			run.phases = append(run.phases, p)
		}
		t1 := time.Now()
		if err := sb.Close(); err != nil {
			tb.Fatal(err)
		}
		run.destroy = time.Since(t1)
		out = append(out, run)
	}
	return out
}

// TestStartupPhasesAreRecorded checks what BenchmarkSandboxStart prints:
// every phase of both sides is recorded, and the worker's fall within the
// supervisor's fork and handshake (the worker may still wait for its v1
// placement, phase sync, while the supervisor's fork phase runs).
func TestStartupPhasesAreRecorded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (namespaces, cgroups)")
	}
	dir, err := os.MkdirTemp("", "execfarm-bench-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := testbin.Build(dir, testbin.Sandbox...); err != nil {
		t.Fatal(err)
	}
	runs := startSandboxes(t, dir, 2)
	var names []string
	// The worker's phases run from the supervisor's fork (its clock
	// starts just before it) to the end of its isolation, before the
	// handshake ends: within fork + handshake.
	var forkHandshake, worker time.Duration
	for _, p := range runs[1].phases {
		names = append(names, p.Name)
		if p.Duration < 0 {
			t.Errorf("phase %s took %v", p.Name, p.Duration)
		}
		switch {
		case p.Name == "fork" || p.Name == "handshake":
			forkHandshake += p.Duration
		case strings.HasPrefix(p.Name, "  worker "):
			worker += p.Duration
		}
	}
	want := []string{"prepare", "cgroup", "fork", "handshake", "ipc", "dispense"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("supervisor phase %q missing from %q", w, names)
		}
	}
	for _, w := range []string{"exec", "listen", "rootfs", "namespaces", "capabilities", "landlock", "seccomp"} {
		if !slices.Contains(names, "  worker "+w) {
			t.Errorf("worker phase %q missing from %q", w, names)
		}
	}
	if worker <= 0 || worker > forkHandshake {
		t.Errorf("worker phases sum to %v, want within the fork and handshake (%v)", worker, forkHandshake)
	}
}

// BenchmarkSandboxStart starts and destroys 100 sandboxes one at a time
// (no supervisor, no execution) and prints the median of every start-up
// phase, the supervisor's and the worker's, next to bare fork+exec+wait of
// the worker binary and of /bin/true, and bwrap, measured in the same run.
func BenchmarkSandboxStart(b *testing.B) {
	dir := binaries(b)
	for range b.N {
		busy0 := busyTime(b)
		runs := startSandboxes(b, dir, 100)
		cpu := (busyTime(b) - busy0) / time.Duration(len(runs))
		bareTrue := timeExec("fork+exec+wait /bin/true", "/bin/true")
		bareWorker := timeExec("fork+exec+wait execfarm-worker", dir+"/execfarm-worker")
		base := float64(bareTrue.pct(0.5))
		var bwrap time.Duration
		if err := haveBwrap(); err == nil {
			bwrap = timeExec("bwrap --unshare-all /bin/true", bwrapArgv...).pct(0.5)
		}
		fmt.Printf("\nsandbox start-up, %d sandboxes, medians\n%-34s %10s %10s\n", len(runs), "phase", "p50", "/true")
		row := func(name string, d time.Duration) {
			fmt.Printf("%-34s %10s %10s\n", name, d.Round(time.Microsecond), ratio(float64(d), base))
		}
		med := func(pick func(startupRun) (time.Duration, bool)) time.Duration {
			var ds []time.Duration
			for _, r := range runs {
				if d, ok := pick(r); ok {
					ds = append(ds, d)
				}
			}
			return series{d: ds}.pct(0.5)
		}
		for i, p := range runs[0].phases {
			row(p.Name, med(func(r startupRun) (time.Duration, bool) {
				if i < len(r.phases) && r.phases[i].Name == p.Name {
					return r.phases[i].Duration, true
				}
				return 0, false
			}))
		}
		total := med(func(r startupRun) (time.Duration, bool) { return r.total, true })
		row("start, total", total)
		row("destroy", med(func(r startupRun) (time.Duration, bool) { return r.destroy, true }))
		row("CPU per sandbox (host-wide, mean)", cpu)
		row(bareWorker.name, bareWorker.pct(0.5))
		row(bareTrue.name, bareTrue.pct(0.5))
		if bwrap > 0 {
			row("bwrap --unshare-all /bin/true", bwrap)
		}
		b.ReportMetric(float64(total.Microseconds()), "start-p50-µs")
		b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/sandbox")
	}
}
