//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// poolSlot is the uid window slot of the warm-pool supervisor: 2 running +
// 4 warm sandboxes.
const poolSlot = 34

// TestWarmPoolNeverSharesASandbox: 64 concurrent clients against a pool of
// 4 (2 slots running); every execution reports its sandbox, and no sandbox
// serves two executions. HealthCheck shows the pool.
func TestWarmPoolNeverSharesASandbox(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("pool", poolSlot, 6, 2, 5*time.Second, func(cfg *supervisor.Config) { cfg.WarmPool = 4 })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for c := 0; c < 64; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2; i++ {
				resp, err := in.client.Execute(callCtx(t), shellReq("echo ok", 0))
				if err != nil || !resp.GetSuccess() {
					t.Errorf("client %d: %v %v", c, err, resp)
					return
				}
				id := resp.GetOutcome().GetSandboxId()
				mu.Lock()
				if prev, dup := seen[id]; dup || id == "" {
					t.Errorf("sandbox %q served %s and %s", id, prev, resp.GetOutcome().GetExecutionId())
				}
				seen[id] = resp.GetOutcome().GetExecutionId()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 128 {
		t.Fatalf("%d distinct sandboxes for 128 executions", len(seen))
	}
	// A taken sandbox's teardown may follow its result; it holds the slot.
	settled(t, in)
	h, err := in.client.HealthCheck(callCtx(t), &sandboxv1.HealthCheckRequest{})
	if err != nil || h.GetWarmPoolSize() != 4 || h.GetWarmPoolInUse() != 0 {
		t.Fatalf("HealthCheck pool = %v, %v (want size 4, none in use once every execution's teardown ended)", h, err)
	}
}

// TestWarmPoolRunsGojaOnPreparedProcesses: goja programs on warm sandboxes
// (each holding a prepared goja process that has run its warm-up) print
// exactly their own output, keep their exit codes and uncaught errors, and
// see nothing of the warm-up.
func TestWarmPoolRunsGojaOnPreparedProcesses(t *testing.T) {
	requireSandbox(t)
	in := startPoolInstance(t, "poolgoja", 2)
	cases := []struct {
		code, out, errOut string
		exit              int32
	}{
		{`console.log("a"); setTimeout(() => console.log("b"), 1); await Promise.resolve(); console.log(typeof globalThis.warm, Object.keys(process.env).length)`, "a\nundefined 0\nb\n", "", 0},
		{`console.log("before"); process.exit(3)`, "before\n", "", 3},
		{`throw new Error("boom")`, "", "Uncaught Error: boom", 1},
	}
	for _, c := range cases {
		// Every run must find a warm sandbox: wait for the pool to refill.
		waitPoolReady(t, in, 2)
		resp, err := in.client.Execute(callCtx(t), gojaReq(c.code, 0))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetOutput() != c.out || !strings.Contains(resp.GetErrorOutput(), c.errOut) || resp.GetOutcome().GetExitCode() != c.exit {
			t.Errorf("%s:\n stdout %q stderr %q exit %d\n want %q, stderr with %q, exit %d", c.code,
				resp.GetOutput(), resp.GetErrorOutput(), resp.GetOutcome().GetExitCode(), c.out, c.errOut, c.exit)
		}
		if strings.Contains(resp.GetOutput()+resp.GetErrorOutput(), "warm") {
			t.Errorf("warm-up output leaked: %q", resp.GetOutput()+resp.GetErrorOutput())
		}
	}
	// Rlimits above the pool's: the prepared process's rlimits must not
	// cap a request that asks for more.
	for _, rt := range []sandboxv1.Runtime{sandboxv1.Runtime_RUNTIME_SHELL, sandboxv1.Runtime_RUNTIME_GOJA} {
		code := "ulimit -n"
		if rt == sandboxv1.Runtime_RUNTIME_GOJA {
			code = "console.log(2048)"
		}
		req := request(rt, code, 0)
		req.Limits = &sandboxv1.ResourceLimits{MaxFileDescriptors: 2048}
		resp, err := in.client.Execute(callCtx(t), req)
		if err != nil || !resp.GetSuccess() || strings.TrimSpace(resp.GetOutput()) != "2048" {
			t.Errorf("%v with 2048 open files on a pool of 1024: %v %v", rt, resp, err)
		}
	}
}

// TestWarmPoolPreparesOnlyWhatIsAsked: warm sandboxes hold a prepared
// goja process while goja requests come; after a shell request, the
// sandboxes started from then on hold none (a shell request would kill it
// unused); after a goja request, they do again, and a goja request that
// finds a sandbox without one still runs.
func TestWarmPoolPreparesOnlyWhatIsAsked(t *testing.T) {
	requireSandbox(t)
	const size = 2
	in := startPoolInstance(t, "poolshape", size)
	first := host.uidBase + poolSlot*rangeSize
	prepared := func() int {
		n := 0
		for _, p := range hostscan.InUIDWindow(first, first+6*rangeSize) {
			if strings.HasPrefix(p.Cmdline, rootfs.GojaPath) && p.State != "Z" {
				n++
			}
		}
		return n
	}
	// turnOver runs size+1 requests of req, each on a full pool, so that
	// every ready sandbox afterwards was started after the first of them;
	// then waits for the pool to be full again.
	turnOver := func(req *sandboxv1.ExecuteRequest, want string) {
		for range size + 1 {
			waitPoolReady(t, in, size)
			resp, err := in.client.Execute(callCtx(t), req)
			if err != nil || !resp.GetSuccess() || resp.GetOutput() != want {
				t.Fatalf("%v: %v %v", req.GetRuntime(), resp, err)
			}
		}
		waitPoolReady(t, in, size)
		settled(t, in)
	}
	waitPoolReady(t, in, size)
	if n := prepared(); n != size {
		t.Fatalf("prepared goja processes in a new pool: %d, want %d", n, size)
	}
	turnOver(shellReq("echo sh", 0), "sh\n")
	if n := prepared(); n != 0 {
		t.Errorf("prepared goja processes after shell requests: %d, want 0", n)
	}
	// The first goja request finds no prepared process and starts its own.
	turnOver(gojaReq(`console.log("js")`, 0), "js\n")
	if n := prepared(); n != size {
		t.Errorf("prepared goja processes after goja requests: %d, want %d", n, size)
	}
}

// TestSandboxReuse: with --sandbox-reuse 3 a warm sandbox serves three
// executions, and each finds it reset: no process, file (workspace, /tmp,
// /dev/shm, message queues) or System V IPC object of the one before (and
// System V shared memory still bounded: the limits outlive a reset), the
// workspace's mode back, CPU time and peak memory its own. An execution
// that does not end by its own exit (timeout) never passes its sandbox on.
func TestSandboxReuse(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("reuse", poolSlot, 6, 1, 5*time.Second, func(cfg *supervisor.Config) {
		cfg.WarmPool = 1
		cfg.SandboxReuse = 3
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	waitReady := func() { waitPoolReady(t, in, 1) }
	// Leaves everything it can behind, and burns CPU and memory.
	const dirty = `set -e
echo ws > /workspace/file; mkdir -p /workspace/d/e; echo t > /tmp/file; echo s > /dev/shm/file
chmod 000 /workspace/d; chmod 700 /workspace
ipcmk -M 4096 >/dev/null; ipcmk -Q >/dev/null; ipcmk -S 2 >/dev/null
python3 -c 'import ctypes, os; ctypes.CDLL(None).mq_open(b"/leftover", os.O_CREAT | os.O_RDWR, 0o600, None)'
ls /dev/mqueue | grep -q leftover
setsid sh -c 'sleep 600' </dev/null >/dev/null 2>&1 &
for i in $(seq 30); do sleep 0.3 & pids="$pids $!"; done
python3 -c 'x = bytearray(64 << 20); import time; t = time.time()
while time.time() - t < 0.3: pass'
wait $pids
python3 -c 'import errno, os, struct; e = lambda tag, perm: struct.pack("<HHI", tag, perm, 0xffffffff)
os.setxattr("/workspace", "system.posix_acl_default", struct.pack("<I", 2) + e(1, 7) + e(4, 7) + e(0x20, 7))
try: os.setxattr("/workspace", "user.note", b"x")
except OSError as err:
    if err.errno != errno.EOPNOTSUPP: raise  # tmpfs has user.* xattrs from Linux 6.6 on'
touch -d @1 /workspace
echo dirty`
	const inspect = `ls -A /workspace /tmp /dev/shm /dev/mqueue | tr '\n' ' '; echo
stat -c %a /workspace
ipcs -m -q -s | grep -c '^0x' || true
cat /proc/sys/kernel/shmmax
python3 -c 'import os; print(os.listxattr("/workspace"), os.stat("/workspace").st_mtime > 1e9)'
ls /proc | grep -c '^[0-9]'`
	var ids []string
	run := func(code string) *sandboxv1.ExecuteResponse {
		waitReady()
		resp, err := in.client.Execute(callCtx(t), shellReq(code, 0))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.GetOutcome().GetSandboxId())
		return resp
	}
	first := run(dirty)
	if !first.GetSuccess() || first.GetOutput() != "dirty\n" {
		t.Fatalf("dirty run: %v", first)
	}
	second := run(inspect)
	// ls of four empty dirs prints their headers only; mode 755; no IPC
	// object, and System V shared memory still bounded to /dev/shm's
	// 64 MiB (the limits last the IPC namespace's life); no xattr or ACL,
	// mtime not the 1970 one; processes: the worker, sh, and the
	// pipeline's ls and grep.
	lines := strings.Split(strings.TrimSpace(second.GetOutput()), "\n")
	if len(lines) != 6 || strings.Contains(lines[0], "file") || strings.Contains(lines[0], "leftover") || strings.Contains(lines[0], " d ") ||
		lines[1] != "755" || lines[2] != "0" || lines[3] != "67108864" || lines[4] != "[] True" {
		t.Errorf("reused sandbox not reset (want empty dirs, mode 755, no IPC, shmmax 64 MiB, no xattr, fresh mtime): %q", second.GetOutput())
	}
	if n, err := strconv.Atoi(lines[len(lines)-1]); err != nil || n > 4 {
		t.Errorf("processes in the reused sandbox: %q (the daemon of the run before survived?)", lines[len(lines)-1])
	}
	u1, u2 := first.GetOutcome().GetUsage(), second.GetOutcome().GetUsage()
	// The dirty run spins 0.3 s and starts python three times; the
	// inspection starts it once. Counters carried over would make the
	// second's CPU time at least the first's; its own is well under half
	// of it. A ratio, not a bound in seconds: a loaded host or the VM's
	// emulation stretches both runs' CPU time alike.
	cpu1, cpu2 := u1.GetCpuUserUs()+u1.GetCpuSystemUs(), u2.GetCpuUserUs()+u2.GetCpuSystemUs()
	t.Logf("CPU time: dirty run %d µs, inspection in the reset sandbox %d µs", cpu1, cpu2)
	if 2*cpu2 >= cpu1 || u2.GetPeakMemoryBytes() >= 64<<20 || u2.GetPidsPeak() >= 20 {
		t.Errorf("second run's usage carries the first's: cpu %d+%d µs, peak %d, pids %d (first: cpu %d+%d, peak %d, pids %d)",
			u2.GetCpuUserUs(), u2.GetCpuSystemUs(), u2.GetPeakMemoryBytes(), u2.GetPidsPeak(),
			u1.GetCpuUserUs(), u1.GetCpuSystemUs(), u1.GetPeakMemoryBytes(), u1.GetPidsPeak())
	}
	run("true")
	run("true") // the sandbox has served three: a fresh one
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("sandbox not reused: %q", ids)
	}
	if ids[3] == ids[0] {
		t.Errorf("sandbox served a fourth execution: %q", ids)
	}
	// A timed-out run's sandbox is destroyed, not reset.
	waitReady()
	resp, err := in.client.Execute(callCtx(t), shellReq("sleep 10", 200))
	if err != nil || resp.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT {
		t.Fatalf("timeout run: %v %v", resp, err)
	}
	after := run("true")
	if after.GetOutcome().GetSandboxId() == resp.GetOutcome().GetSandboxId() {
		t.Errorf("a timed-out execution's sandbox %s served another", resp.GetOutcome().GetSandboxId())
	}
}

// TestSandboxReuseKeepsGoja: with --sandbox-reuse a warm sandbox keeps
// its goja process for the executions that follow (runtime/keep): the
// same process (its pid in the payload cgroup) serves them, each in a
// runtime of its own (no global, pending timer or exit code of the one
// before), and a shell execution in that sandbox finds no goja process
// beside it.
func TestSandboxReuseKeepsGoja(t *testing.T) {
	requireSandbox(t)
	in := startPoolInstance(t, "reusegoja", 1, func(cfg *supervisor.Config) { cfg.SandboxReuse = 3 })
	payloadProcs := func(id string) string {
		var pids []string
		for _, d := range sandboxCgroups(id) {
			if b, err := os.ReadFile(filepath.Join(d, "payload", "cgroup.procs")); err == nil {
				pids = append(pids, strings.Fields(string(b))...)
			}
		}
		sort.Strings(pids)
		return strings.Join(pids, " ")
	}
	run := func(req *sandboxv1.ExecuteRequest) (*sandboxv1.ExecuteResponse, string) {
		t.Helper()
		waitPoolReady(t, in, 1)
		resp, err := in.client.Execute(callCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		waitPoolReady(t, in, 1)
		return resp, payloadProcs(resp.GetOutcome().GetSandboxId())
	}
	first, procs1 := run(gojaReq(`globalThis.leak = "x"; setTimeout(() => console.log("late"), 200); console.log("one"); process.exit(4)`, 0))
	if first.GetOutput() != "one\n" || first.GetOutcome().GetExitCode() != 4 {
		t.Fatalf("first run: %v", first)
	}
	second, procs2 := run(gojaReq(`await new Promise(r => setTimeout(r, 400)); console.log(typeof leak, typeof process.exitCode)`, 0))
	if second.GetOutput() != "undefined undefined\n" || !second.GetSuccess() {
		t.Errorf("second run saw the first's runtime (want %q, exit 0): %v", "undefined undefined\n", second)
	}
	id := first.GetOutcome().GetSandboxId()
	if second.GetOutcome().GetSandboxId() != id {
		t.Fatalf("sandbox not reused: %s then %s", id, second.GetOutcome().GetSandboxId())
	}
	if procs1 == "" || procs1 != procs2 {
		t.Errorf("goja process not kept: payload cgroup held %q after the first run, %q after the second", procs1, procs2)
	}
	third, _ := run(shellReq(`ls /proc | grep -c '^[0-9]'`, 0))
	if third.GetOutcome().GetSandboxId() != id {
		t.Fatalf("third run not in the reused sandbox %s: %v", id, third)
	}
	// The worker, sh, ls and grep: no goja process beside the shell.
	if n, err := strconv.Atoi(strings.TrimSpace(third.GetOutput())); err != nil || n > 4 {
		t.Errorf("processes beside a shell run in a sandbox that kept goja: %q", third.GetOutput())
	}
}

// TestWarmPoolDropsSandboxesWhoseWorkerDied: when the fork server dies, the
// workers of the ready sandboxes die with it (Pdeathsig); the pool must
// not hand them out but destroy and replace them, so the next executions
// succeed.
func TestWarmPoolDropsSandboxesWhoseWorkerDied(t *testing.T) {
	requireSandbox(t)
	in := startPoolInstance(t, "pooldead", 2)
	waitPoolReady(t, in, 2)
	var fs int
	for _, p := range hostscan.WithMarker(forkserver.Arg) {
		if p.PPID == os.Getpid() {
			fs = p.PID
		}
	}
	if fs == 0 {
		t.Fatal("no fork server among this process's children")
	}
	// Its workers, which die with it and are reparented to the host's
	// init: the test ends once they are reaped, so that a later test's
	// check for leftovers does not find them as zombies.
	workers, _ := os.ReadFile("/proc/" + strconv.Itoa(fs) + "/task/" + strconv.Itoa(fs) + "/children")
	defer func() {
		for _, w := range strings.Fields(string(workers)) {
			for deadline := time.Now().Add(testbin.Scaled(30 * time.Second)); ; {
				if _, err := os.Stat("/proc/" + w); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("worker %s of the killed fork server still exists after 30 s", w)
					break
				}
				time.Sleep(5 * time.Millisecond) // polling interval
			}
		}
	}()
	if err := syscall.Kill(fs, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The client reaps the fork server once it has marked every worker
	// of it exited: after that the pool must see them dead.
	for deadline := time.Now().Add(testbin.Scaled(10 * time.Second)); ; {
		if _, err := os.Stat("/proc/" + strconv.Itoa(fs)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed fork server was never reaped")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	for i := range 3 {
		resp, err := in.client.Execute(callCtx(t), shellReq("echo ok", 0))
		if err != nil || !resp.GetSuccess() || resp.GetOutput() != "ok\n" {
			t.Errorf("execution %d after the fork server died: %v %v", i, describe(resp), err)
		}
	}
}

// waitPoolReady waits, up to 10 s, until in's warm pool has n sandboxes
// ready (HealthCheck), and fails the test otherwise.
func waitPoolReady(t *testing.T, in *instance, n int32) {
	t.Helper()
	deadline := time.Now().Add(testbin.Scaled(10 * time.Second))
	for {
		h, err := in.client.HealthCheck(callCtx(t), &sandboxv1.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if h.GetWarmPoolReady() == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm pool not ready (want %d ready): %v", n, h)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// TestWarmSandboxesWaitAtBackgroundCPUWeight: ready sandboxes hold a
// tenth of the default CPU weight; the one an execution takes runs at the
// default.
func TestWarmSandboxesWaitAtBackgroundCPUWeight(t *testing.T) {
	requireSandbox(t)
	in := startPoolInstance(t, "poolweight", 2)
	waitPoolReady(t, in, 2)
	weights := sandboxCPUWeights
	low, normal := cpuWeightValues()
	ready := weights()
	if len(ready) != 2 {
		t.Fatalf("sandbox cgroups with a CPU weight: %v, want the 2 ready ones", ready)
	}
	for id, w := range ready {
		if w != low {
			t.Errorf("ready sandbox %s: CPU weight %s, want %s", id, w, low)
		}
	}
	async, err := in.client.ExecuteAsync(callCtx(t), shellReq("echo started; sleep 30", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer in.client.CancelExecution(callCtx(t), &sandboxv1.CancelExecutionRequest{ExecutionId: async.GetExecutionId()})
	// Its output proves the program runs, so its sandbox was taken (and
	// brought to the default weight) before: RUNNING alone comes earlier,
	// when the execution gets its slot.
	deadline := time.Now().Add(testbin.Scaled(10 * time.Second))
	for {
		r, err := in.client.GetExecution(callCtx(t), &sandboxv1.GetExecutionRequest{ExecutionId: async.GetExecutionId()})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.GetOutput(), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution printed nothing after 10 s: %v", r.GetState())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	running := 0
	for id, w := range weights() {
		if _, wasReady := ready[id]; wasReady && w == normal {
			running++
		}
	}
	if running != 1 {
		t.Errorf("taken sandboxes at the default CPU weight: %d, want 1 (%v)", running, weights())
	}
}

// sandboxCPUWeights returns each sandbox cgroup's weight file's value, by
// the sandbox's cgroup name ("sb-…"): cpu.weight on v2, cpu.shares on v1.
func sandboxCPUWeights() map[string]string {
	out := map[string]string{}
	for _, parent := range host.cgParents {
		for _, name := range []string{"cpu.weight", "cpu.shares"} {
			files, _ := filepath.Glob(filepath.Join(parent, "sb-*", name))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err == nil {
					out[filepath.Base(filepath.Dir(f))] = strings.TrimSpace(string(b))
				}
			}
		}
	}
	return out
}

// cpuWeightValues returns what sandboxCPUWeights reads for the background
// and the default CPU weight on this host's cgroup version.
func cpuWeightValues() (low, normal string) {
	if cgroup.Probe(host.cg).Mode == cgroup.V1 {
		return "102", "1024"
	}
	return "10", "100"
}

// startPoolInstance starts a supervisor on the pool's uid slots, running
// one execution at a time, with a warm pool of warm sandboxes and opts; it
// is stopped at cleanup.
func startPoolInstance(t *testing.T, name string, warm int, opts ...func(*supervisor.Config)) *instance {
	t.Helper()
	opts = append([]func(*supervisor.Config){func(cfg *supervisor.Config) { cfg.WarmPool = warm }}, opts...)
	in, err := startInstance(name, poolSlot, 6, 1, 5*time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop supervisor %s: %v", name, err)
		}
	})
	return in
}
