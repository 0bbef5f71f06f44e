package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// startSession starts a session sandbox for the test, closed at cleanup
// (and checked to leave nothing).
func startSession(t *testing.T, tweak ...func(*Spec)) *Sandbox {
	t.Helper()
	cfg := requireSandbox(t)
	spec := Spec{
		Limits:         cgroup.Limits{MemoryMaxBytes: 512 << 20, PidsMax: 128},
		WorkspaceBytes: 16 << 20,
		Session:        true,
	}
	for _, f := range tweak {
		f(&spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sb, err := Start(ctx, cfg, spec)
	if err != nil {
		t.Fatalf("start session sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sb
}

// shell is the request of a shell exec in /workspace.
func shell(cmd string) *workerv1.RunRequest {
	return &workerv1.RunRequest{
		Argv: []string{"/bin/sh", "-c", cmd},
		Env:  []string{"PATH=/usr/bin:/bin", "HOME=/workspace"},
		Dir:  "/workspace",
	}
}

// result is what an exec printed and how it ended.
type result struct {
	stdout, stderr string
	exit           *workerv1.Exit
	usage          ExecUsage
}

// collect waits for e and gathers its output.
func collect(t *testing.T, e *Exec) result {
	t.Helper()
	var out, errb bytes.Buffer
	exit, err := e.Wait(func(ev *workerv1.RunEvent) {
		out.Write(ev.GetStdout())
		errb.Write(ev.GetStderr())
	})
	if err != nil {
		t.Fatalf("exec %s: wait: %v", e.ID(), err)
	}
	return result{stdout: out.String(), stderr: errb.String(), exit: exit, usage: e.Usage()}
}

// run runs cmd in sb and returns its result.
func run(t *testing.T, sb *Sandbox, cmd string) result {
	t.Helper()
	e, err := sb.Exec(context.Background(), ExecRequest{Run: shell(cmd)})
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	return collect(t, e)
}

func TestSessionFilesPersistBetweenExecs(t *testing.T) {
	sb := startSession(t)
	r := run(t, sb, `pwd; id -u; echo hello > note.txt`)
	if r.exit.GetExitCode() != 0 || r.stdout != "/workspace\n1000\n" {
		t.Fatalf("first exec: %+v", r)
	}
	r = run(t, sb, `cat note.txt; exit 3`)
	if r.exit.GetExitCode() != 3 || r.stdout != "hello\n" {
		t.Fatalf("second exec: %+v", r)
	}
	if r.usage.CPUUserMicros+r.usage.CPUSystemMicros <= 0 {
		t.Errorf("no usage from wait4: %+v", r.usage)
	}
	if !r.usage.PidsPeakKnown || r.usage.PidsPeak < 1 {
		t.Errorf("pids peak of the exec's cgroup: %+v", r.usage)
	}
	if n := sb.RunningExecs(); n != 0 {
		t.Errorf("RunningExecs after both ended: %d", n)
	}
}

func TestSessionRefusesSingleUseCalls(t *testing.T) {
	sb := startSession(t)
	if _, err := sb.Run(context.Background(), shell("true"), func(*workerv1.RunEvent) {}); !errors.Is(err, ErrNotSession) {
		t.Errorf("Run on a session sandbox: %v, want ErrNotSession", err)
	}
	one, err := Start(context.Background(), requireSandbox(t), Spec{Limits: cgroup.Limits{PidsMax: 16}})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.Exec(context.Background(), ExecRequest{Run: shell("true")}); !errors.Is(err, ErrNotSession) {
		t.Errorf("Exec on a single-use sandbox: %v, want ErrNotSession", err)
	}
	if _, _, err := one.Stat(context.Background(), "x"); !errors.Is(err, ErrNotSession) {
		t.Errorf("Stat on a single-use sandbox: %v, want ErrNotSession", err)
	}
}

func TestSessionConcurrentExecs(t *testing.T) {
	sb := startSession(t)
	// Each exec waits for a line on stdin, so all of them run at once.
	var execs []*Exec
	for i := range MaxConcurrentExecs {
		e, err := sb.Exec(context.Background(), ExecRequest{Run: shell(`read line; echo "$line" out; echo "$line" err >&2`), StdinOpen: true})
		if err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
		execs = append(execs, e)
	}
	if n := sb.RunningExecs(); n != MaxConcurrentExecs {
		t.Errorf("RunningExecs: %d, want %d", n, MaxConcurrentExecs)
	}
	if _, err := sb.Exec(context.Background(), ExecRequest{Run: shell("true")}); !errors.Is(err, ErrTooManyExecs) {
		t.Fatalf("exec beyond the bound: %v, want ErrTooManyExecs", err)
	}
	var wg sync.WaitGroup
	results := make([]result, len(execs))
	for i, e := range execs {
		wg.Go(func() { results[i] = collect(t, e) })
	}
	for i, e := range execs {
		if err := e.WriteStdin([]byte(strings.Repeat("x", i) + "\n")); err != nil {
			t.Fatalf("stdin of %d: %v", i, err)
		}
		if err := e.CloseStdin(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i, r := range results {
		want := strings.Repeat("x", i)
		if r.stdout != want+" out\n" || r.stderr != want+" err\n" || r.exit.GetExitCode() != 0 {
			t.Errorf("exec %d: %+v", i, r)
		}
	}
	// A slot is free again.
	if r := run(t, sb, "echo again"); r.stdout != "again\n" {
		t.Errorf("after the bound: %+v", r)
	}
}

// started runs req in sb and returns the exec once its stdout holds
// marker, with a channel that yields its result.
func started(t *testing.T, ctx context.Context, sb *Sandbox, req ExecRequest, marker string) (*Exec, <-chan result) {
	t.Helper()
	e, err := sb.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	seen := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		var once sync.Once
		exit, err := e.Wait(func(ev *workerv1.RunEvent) {
			out.Write(ev.GetStdout())
			errb.Write(ev.GetStderr())
			if strings.Contains(out.String(), marker) {
				once.Do(func() { close(seen) })
			}
		})
		if err != nil {
			exit = &workerv1.Exit{StartError: "wait: " + err.Error()}
		}
		done <- result{stdout: out.String(), stderr: errb.String(), exit: exit, usage: e.Usage()}
	}()
	select {
	case <-seen:
	case r := <-done:
		t.Fatalf("exec ended before printing %q: %+v", marker, r)
	case <-time.After(10 * time.Second):
		t.Fatalf("exec did not print %q", marker)
	}
	return e, done
}

// processes lists the command lines of the sandbox's processes, from an
// exec of its own (which it leaves out).
func processes(t *testing.T, sb *Sandbox) string {
	t.Helper()
	r := run(t, sb, `for p in /proc/[0-9]*; do [ "${p#/proc/}" = $$ ] && continue; tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`)
	return r.stdout
}

// waitProcesses waits, bounded, until the sandbox's processes satisfy ok.
func waitProcesses(t *testing.T, sb *Sandbox, ok func(ps string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := processes(t, sb)
		if ok(ps) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the sandbox never became as expected:\n%s", ps)
		}
	}
}

// count counts the lines of ps that are exactly cmd (with tr's trailing
// space).
func count(ps, cmd string) int {
	n := 0
	for _, l := range strings.Split(ps, "\n") {
		if l == cmd+" " {
			n++
		}
	}
	return n
}

func TestSessionKillEndsTheExecsTreeOnly(t *testing.T) {
	sb := startSession(t)
	// A: a background job, a setsid daemon and a double-forked one, all
	// marked 1001; B, another exec, marked 1002.
	a, aDone := started(t, context.Background(), sb, ExecRequest{Run: shell(
		`sleep 1001 & setsid sleep 1001 & (setsid sh -c 'sleep 1001 & exit' &) ; echo ready; sleep 1001`)}, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, bDone := started(t, ctx, sb, ExecRequest{Run: shell(`echo ready; sleep 1002`)}, "ready")
	// "ready" may come before the children have exec'd sleep.
	waitProcesses(t, sb, func(ps string) bool { return count(ps, "sleep 1001") == 4 && count(ps, "sleep 1002") == 1 })
	if err := a.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	r := <-aDone
	if r.exit.GetSignal() != 9 {
		t.Errorf("killed exec's exit: %+v", r.exit)
	}
	ps := processes(t, sb)
	if strings.Contains(ps, "sleep 1001") || count(ps, "sleep 1002") != 1 {
		t.Fatalf("after killing A, processes:\n%s", ps)
	}
	// Cancelling B's context kills B the same way (a timeout, a cancel).
	cancel()
	select {
	case r := <-bDone:
		if r.exit.GetSignal() != 9 {
			t.Errorf("cancelled exec's exit: %+v", r.exit)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled exec did not end")
	}
	if ps := processes(t, sb); strings.Contains(ps, "sleep 100") {
		t.Fatalf("after cancelling B, processes:\n%s", ps)
	}
}

func TestSessionSignalsReachTheProcessGroup(t *testing.T) {
	sb := startSession(t)
	e, done := started(t, context.Background(), sb, ExecRequest{Run: shell(
		`trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)}, "ready")
	if err := e.Signal(0); !errors.Is(err, ErrInvalidSignal) {
		t.Errorf("signal 0: %v, want ErrInvalidSignal", err)
	}
	if err := e.Signal(15); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.exit.GetExitCode() != 7 || !strings.Contains(r.stdout, "got TERM") {
		t.Fatalf("after SIGTERM: %+v", r)
	}
	if err := e.Signal(15); !errors.Is(err, ErrExecEnded) {
		t.Errorf("signal after the end: %v, want ErrExecEnded", err)
	}
}

func TestSessionStdinStreams(t *testing.T) {
	sb := startSession(t)
	e, err := sb.Exec(context.Background(), ExecRequest{Run: shell(`wc -c`), StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- collect(t, e) }()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for range 3 {
		if err := e.WriteStdin(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; strings.TrimSpace(r.stdout) != "3145728" {
		t.Fatalf("wc -c of 3 MiB of stdin: %+v", r)
	}
	if err := e.WriteStdin([]byte("late")); !errors.Is(err, ErrExecEnded) {
		t.Errorf("stdin after the end: %v, want ErrExecEnded", err)
	}
}

func TestSessionStartError(t *testing.T) {
	sb := startSession(t)
	e, err := sb.Exec(context.Background(), ExecRequest{Run: &workerv1.RunRequest{Argv: []string{"/no/such/program"}, Dir: "/workspace"}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, e)
	if r.exit.GetStartError() == "" {
		t.Fatalf("exit of a missing program: %+v", r.exit)
	}
	if n := sb.RunningExecs(); n != 0 {
		t.Errorf("RunningExecs: %d", n)
	}
}

func TestSessionFileDescriptorsMinimum(t *testing.T) {
	cfg := requireSandbox(t)
	_, err := Start(context.Background(), cfg, Spec{Limits: cgroup.Limits{PidsMax: 16}, Session: true, FileDescriptors: 64})
	if !errors.Is(err, ErrFileDescriptors) {
		t.Fatalf("session with 64 descriptors: %v, want ErrFileDescriptors", err)
	}
	sb := startSession(t, func(s *Spec) { s.FileDescriptors = 1024 })
	low := shell("true")
	low.Rlimits = []*workerv1.Rlimit{{Resource: "NOFILE", Soft: 64, Hard: 64}}
	if _, err := sb.Exec(context.Background(), ExecRequest{Run: low}); !errors.Is(err, ErrFileDescriptors) {
		t.Fatalf("exec with NOFILE 64: %v, want ErrFileDescriptors", err)
	}
	// The sandbox's own rlimits, exec after exec.
	for range 3 {
		req := shell("ulimit -n")
		req.Rlimits = []*workerv1.Rlimit{{Resource: "NOFILE", Soft: 1024, Hard: 1024}, {Resource: "FSIZE", Soft: 16 << 20, Hard: 16 << 20}}
		e, err := sb.Exec(context.Background(), ExecRequest{Run: req})
		if err != nil {
			t.Fatal(err)
		}
		if r := collect(t, e); r.stdout != "1024\n" {
			t.Fatalf("ulimit -n: %+v", r)
		}
	}
}

func TestSessionFileCallTurns(t *testing.T) {
	sb := startSession(t)
	upload(t, sb, "f", 0, []byte("x"))
	var open []*FileReader
	for range MaxConcurrentFileCalls {
		r, err := sb.Download(context.Background(), "f")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := sb.Stat(ctx, "f"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a file call beyond the bound: %v, want to wait until its deadline", err)
	}
	open[0].Close()
	open[0].Close() // idempotent: gives back one turn only
	if _, ok, err := sb.Stat(context.Background(), "f"); !ok || err != nil {
		t.Fatalf("stat once a turn is free: %v %v", ok, err)
	}
	for _, r := range open[1:] {
		r.Close()
	}
}

func TestSessionCloseLeavesNothing(t *testing.T) {
	cfg := requireSandbox(t)
	sb, err := Start(context.Background(), cfg, Spec{Limits: cgroup.Limits{MemoryMaxBytes: 256 << 20, PidsMax: 64}, Session: true})
	if err != nil {
		t.Fatal(err)
	}
	// A daemon left by an ended exec, and an exec still running.
	if r := run(t, sb, `setsid sleep 1003 > /dev/null 2>&1 < /dev/null & echo started`); r.stdout != "started\n" {
		t.Fatalf("daemon: %+v", r)
	}
	e, done := started(t, context.Background(), sb, ExecRequest{Run: shell(`echo ready; sleep 1004`)}, "ready")
	cgPath, hostUID := sb.CgroupPath(), sb.HostUID()
	if err := sb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if r := <-done; r.exit.GetStartError() == "" {
		t.Errorf("the running exec after Close: %+v, want its Wait to fail", r)
	}
	if _, err := sb.Exec(context.Background(), ExecRequest{Run: shell("true")}); !errors.Is(err, ErrClosed) {
		t.Errorf("exec after Close: %v, want ErrClosed", err)
	}
	if err := e.Kill(); err != nil {
		t.Errorf("kill after Close: %v", err)
	}
	if _, err := os.Stat(cgPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s after Close: %v", cgPath, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "sb", sb.ID())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host directory after Close: %v", err)
	}
	// No process of the sandbox's uid range is left on the host.
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "Uid:" {
				if uid, _ := strconv.ParseUint(f[1], 10, 32); uid >= uint64(hostUID) && uid < uint64(hostUID)+65536 {
					t.Errorf("process %s of the sandbox's uid range left: %s", ent.Name(), strings.TrimSpace(l))
				}
			}
		}
	}
}

// TestSessionPlaceByGate runs execs the way cgroup v2 places them (held at
// the gate, moved into their cgroup by pid) on any host: each is in its
// own cgroup, and a kill ends its tree there too.
func TestSessionPlaceByGate(t *testing.T) {
	cfg := *requireSandbox(t)
	cfg.PlaceByGate = true
	sb, err := Start(context.Background(), &cfg, Spec{Limits: cgroup.Limits{MemoryMaxBytes: 256 << 20, PidsMax: 64}, Session: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if r := run(t, sb, `grep -E 'pids|^0::' /proc/self/cgroup | head -1 | sed 's/.*://'`); r.stdout != "/payload/x1\n" {
		t.Errorf("the exec's cgroup: %q, want /payload/x1", r.stdout)
	}
	a, aDone := started(t, context.Background(), sb, ExecRequest{Run: shell(`setsid sleep 1005 & echo ready; sleep 1005`)}, "ready")
	waitProcesses(t, sb, func(ps string) bool { return count(ps, "sleep 1005") == 2 })
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if r := <-aDone; r.exit.GetSignal() != 9 {
		t.Errorf("killed exec: %+v", r.exit)
	}
	if ps := processes(t, sb); strings.Contains(ps, "sleep 1005") {
		t.Errorf("after the kill:\n%s", ps)
	}
}

// TestSessionsUnderLoad runs several session sandboxes at once, each with
// ten execs at once that each write a file the test then downloads, and
// an upload the exec reads: nothing is lost or mixed up, and closing them
// leaves nothing (the suite's teardown checks cgroups, directories and uid
// ranges).
func TestSessionsUnderLoad(t *testing.T) {
	const sandboxes, execs = 4, 10
	var wg sync.WaitGroup
	for i := range sandboxes {
		sb := startSession(t)
		for j := range execs {
			wg.Go(func() {
				name := fmt.Sprintf("in-%d-%d", i, j)
				want := strings.Repeat(name, 1000)
				if _, err := sb.Upload(context.Background(), name, 0, strings.NewReader(want)); err != nil {
					t.Errorf("upload %s: %v", name, err)
					return
				}
				e, err := sb.Exec(context.Background(), ExecRequest{Run: shell(fmt.Sprintf(`cat %s > out-%d-%d; wc -c < %s`, name, i, j, name))})
				if err != nil {
					t.Errorf("exec %s: %v", name, err)
					return
				}
				var out bytes.Buffer
				exit, err := e.Wait(func(ev *workerv1.RunEvent) { out.Write(ev.GetStdout()) })
				if err != nil || exit.GetExitCode() != 0 || strings.TrimSpace(out.String()) != strconv.Itoa(len(want)) {
					t.Errorf("exec %s: %q %v %v", name, out.String(), exit, err)
					return
				}
				got, err := download(sb, fmt.Sprintf("out-%d-%d", i, j))
				if err != nil || string(got) != want {
					t.Errorf("download out-%d-%d: %d bytes, %v", i, j, len(got), err)
				}
			})
		}
	}
	wg.Wait()
}
