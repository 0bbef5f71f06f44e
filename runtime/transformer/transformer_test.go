package transformer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/procstatus"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/transform"
)

func TestMain(m *testing.M) { leakcheck.Main(m, leakcheck.IgnoreFDs(ProcessFDs)) }

// TestSameAsInProcess: a helper's answers are the transforms' own, for
// programs and for syntax errors, for both kinds.
func TestSameAsInProcess(t *testing.T) {
	ctx := context.Background()
	code := "const x: number = 41 + 1;\nconsole.log(x)"
	for _, tc := range []struct {
		kind Kind
		in   func(string) (string, error)
	}{{Goja, transform.TypeScript}, {Node, node.Transform}} {
		want, err := tc.in(code)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Transform(ctx, tc.kind, code); err != nil || got != want {
			t.Errorf("%v: %q, %v; want %q", tc.kind, got, err, want)
		}
		bad := "const ok = 1;\nconst é = é é;"
		_, wantErr := tc.in(bad)
		_, err = Transform(ctx, tc.kind, bad)
		var se *transform.SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, transform.ErrSyntax) || err.Error() != wantErr.Error() {
			t.Errorf("%v: syntax error %v; want %v", tc.kind, err, wantErr)
		} else if se.Line != 2 || se.LineText != "const é = é é;" {
			t.Errorf("%v: syntax error %+v", tc.kind, se)
		}
	}
	if _, err := Transform(ctx, Goja, ""); !errors.Is(err, transform.ErrEmptyCode) {
		t.Errorf("empty code: %v", err)
	}
}

// TestNestingPastTheStackEndsOnlyTheHelper: code nested past esbuild's
// stack (which, in the supervisor's own process, ended the process with a
// fatal stack overflow) ends the helper only, and is a LimitError of the
// stack; the next transform gets a new helper.
func TestNestingPastTheStackEndsOnlyTheHelper(t *testing.T) {
	p := newPool(1, bounds{stack: 16 << 20, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	ctx := context.Background()
	const depth = 50000 // 16 MiB of stack lasts ~3500 levels
	for name, code := range map[string]string{
		"parentheses": "const x = " + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth) + ";",
		"negations":   "const x = " + strings.Repeat("!", depth) + "1;",
		"assignments": "let a; " + strings.Repeat("a=", depth) + "1;",
		"else-if":     "let a = 0;\n" + strings.Repeat("if (a) a++; else ", depth) + "a--;",
	} {
		_, err := p.transform(ctx, Goja, code)
		var le *LimitError
		if !errors.As(err, &le) || le.Bound != "stack" || le.Limit != 16<<20 {
			t.Errorf("%s, %d levels: %v; want a LimitError of the stack", name, depth, err)
			continue
		}
		if !strings.Contains(err.Error(), "nests too deeply") {
			t.Errorf("%s: message %q", name, err)
		}
		if js, err := p.transform(ctx, Goja, "console.log(1)"); err != nil || !strings.Contains(js, "console.log(1)") {
			t.Fatalf("after %s: %q, %v", name, js, err)
		}
	}
	closePool(t, p)
}

// TestMemoryBound: code whose transform needs more than the helper's
// memory is a LimitError of memory, not the supervisor's memory.
func TestMemoryBound(t *testing.T) {
	if raceBuild {
		t.Skip("a race-detector build runs its helpers without RLIMIT_DATA (race.go); the build without it runs this test")
	}
	p := newPool(1, bounds{stack: MaxStack, memory: 96 << 20, cpu: MaxCPUTime, timeout: time.Minute})
	code := strings.Repeat("{ using a = b }\n", 120000) // ~2 MB, lowered to ~60 MB
	_, err := p.transform(context.Background(), Goja, code)
	var le *LimitError
	if !errors.As(err, &le) || le.Bound != "memory" || le.Limit != 96<<20 {
		t.Errorf("%d bytes of using in 96 MiB: %v; want a LimitError of memory", len(code), err)
	}
	closePool(t, p)
}

// TestOutputBound: a program over MaxOutput once transformed comes back as
// a LimitError giving its size, and the helper serves on.
func TestOutputBound(t *testing.T) {
	// Bounds of time past what the work takes, even in a -race build on
	// a loaded host (4 MiB of a=1 took longer than 43 s so): the output
	// bound is tested, not the time.
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: 2 * time.Minute, timeout: 3 * time.Minute})
	code := strings.Repeat("a=1;", 1<<19) // 2 MiB, ~10.7 MB with its source map
	_, err := p.transform(context.Background(), Goja, code)
	var le *LimitError
	if !errors.As(err, &le) || le.Bound != "output" || le.Size <= MaxOutput || le.Limit != MaxOutput {
		t.Fatalf("%d bytes of a=1: %v; want a LimitError of the output", len(code), err)
	}
	if len(p.idle) != 1 {
		t.Fatalf("%d idle helpers after an output over the bound; want the same one back", len(p.idle))
	}
	// The idle helper gave the transform's heap back (a race-detector
	// build keeps its shadow of it: race.go).
	if rss := residentBytes(t, p.idle[0].cmd.Process.Pid); rss > 64<<20 && !raceBuild {
		t.Errorf("idle helper after a big transform: %d MiB resident", rss>>20)
	}
	closePool(t, p)
}

// residentBytes is pid's VmRSS.
func residentBytes(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := procstatus.Bytes(pid, "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCPUTimeBound: a transform past its CPU time ends its helper and is
// a LimitError of CPU time, saying so.
func TestCPUTimeBound(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: time.Millisecond, timeout: time.Minute})
	code := strings.Repeat("const a = [1, 2, 3].map(x => x * 2);\n", 50000)
	_, err := p.transform(context.Background(), Goja, code)
	var le *LimitError
	if !errors.As(err, &le) || le.Bound != "cpu" || le.Limit != int64(time.Millisecond) || !strings.Contains(err.Error(), "of CPU time") {
		t.Errorf("a transform of %d bytes in 1 ms of CPU time: %v; want a LimitError of CPU time", len(code), err)
	}
	if len(p.idle) != 0 {
		t.Errorf("%d idle helpers after a timeout; want the killed one gone", len(p.idle))
	}
}

// TestStarvedTransformIsNotRefused: a helper stopped in the middle of a
// transform (as one waiting for a CPU on a loaded host) for longer than
// the code's CPU time bound, then let go, gives the code's own answer,
// not a LimitError: waiting is not the code's doing. Each of the
// supervisor's wall-clock deadline and the helper's own watch would
// refuse it if they counted the stop.
func TestStarvedTransformIsNotRefused(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	// A helper done starting, idle: from now on its CPU time is the
	// request's.
	if _, err := p.transform(context.Background(), Goja, "1"); err != nil {
		t.Fatal(err)
	}
	h := p.idle[0]
	pid := h.cmd.Process.Pid
	// Quadratic (slowCode): ~0.2 s of CPU time, within its bound of
	// CPUTimeBase; the end is a syntax error, its answer.
	code := strings.Repeat("a<(", 450)
	bound := cpuFor(len(code), MaxCPUTime)
	before := helperCPU(t, pid)
	done := make(chan error, 1)
	go func() {
		_, err := p.transform(context.Background(), Goja, code)
		done <- err
	}()
	// 20 ms of CPU time past the idle helper's: it read the request (a
	// matter of microseconds) and is parsing.
	if !waitUntil(func() bool { return helperCPU(t, pid) >= before+20*time.Millisecond }) {
		t.Fatal("the helper did not start the transform")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := helperCPU(t, pid)
	t.Logf("stopped after %v of CPU time", stopped-before)
	time.Sleep(bound + time.Second) // the scenario: wall-clock time passes, CPU time does not
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Errorf("SIGCONT: %v (the helper was killed while stopped?)", err)
	}
	err := <-done
	var se *transform.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("a transform stopped for %v, past its CPU time bound of %v: %v; want its syntax error", bound+time.Second, bound, err)
	}
	// It was parsing when stopped, not done: the stop was in the middle.
	after := helperCPU(t, pid)
	t.Logf("%v of CPU time after the stop", after-stopped)
	if after-stopped < 20*time.Millisecond {
		t.Errorf("the helper used %v of CPU time after the stop; the transform ended before it", after-stopped)
	}
	if len(p.idle) != 1 || p.idle[0] != h {
		t.Errorf("idle helpers %v; want the starved one kept", p.idle)
	}
	closePool(t, p)
}

// TestWallBackstopIsRetryable: a transform whose helper gets no CPU at
// all ends at the wall-clock backstop (the pool's timeout) as ErrStarved,
// which the caller may retry, never a LimitError; the helper is killed.
func TestWallBackstopIsRetryable(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: 300 * time.Millisecond})
	h, err := p.start()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(h.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p.put(h)
	_, err = p.transform(context.Background(), Goja, "console.log(1)")
	var le *LimitError
	if !errors.Is(err, ErrStarved) || errors.As(err, &le) || errors.Is(err, ErrHelper) {
		t.Errorf("a transform without CPU past the wall-clock backstop: %v; want ErrStarved", err)
	}
	if len(p.idle) != 0 {
		t.Errorf("%d idle helpers after the backstop; want the starved one killed", len(p.idle))
	}
	p.timeout = time.Minute // a new helper's start fits, on a loaded host too
	if js, err := p.transform(context.Background(), Goja, "console.log(2)"); err != nil || !strings.Contains(js, "console.log(2)") {
		t.Errorf("after the backstop: %q, %v", js, err)
	}
	closePool(t, p)
}

// helperCPU is pid's user and system time, from /proc/pid/stat (in
// clock ticks of 10 ms).
func helperCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's ")": state is the first, utime the
	// 12th, stime the 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestWaitEndsWithTheContext: with every helper busy a caller waits only
// as long as its context, and a caller's context that ends during its
// transform ends the transform.
func TestWaitEndsWithTheContext(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	p.slots <- struct{}{} // the only helper is busy
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.transform(ctx, Goja, "console.log(1)"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting past the context: %v", err)
	}
	<-p.slots
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	if _, err := p.transform(gone, Goja, "console.log(2)"); !errors.Is(err, context.Canceled) {
		t.Errorf("transform with an ended context: %v", err)
	}
	closePool(t, p)
}

// TestCache: a repeated transform is served from the cache, for its kind
// only; code over cacheMaxCode, output over cacheMaxOutput and failed
// transforms are not kept.
func TestCache(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	ctx := context.Background()
	code := "const cached: number = 41 + 1; console.log(cached)"
	first, err := p.transform(ctx, Goja, code)
	if err != nil {
		t.Fatal(err)
	}
	if !p.cache.Contains(cacheKey{Goja, code}) {
		t.Fatal("successful transform not cached")
	}
	closePool(t, p) // a hit needs no helper
	if again, err := p.transform(ctx, Goja, code); err != nil || again != first {
		t.Fatalf("cached transform = %q, %v; want %q", again, err, first)
	}
	if len(p.idle) != 0 {
		t.Error("a cache hit started a helper")
	}
	if p.cache.Contains(cacheKey{Node, code}) {
		t.Fatal("node shares goja's entry")
	}
	big := "const x = 1;\n" + strings.Repeat("// padding\n", cacheMaxCode/10)
	blowup := strings.Repeat("{ using a = b }\n", 1200) // small code, output over cacheMaxOutput
	bad := "const = ;"
	for _, c := range []string{big, blowup, bad} {
		_, _ = p.transform(ctx, Goja, c)
		if p.cache.Contains(cacheKey{Goja, c}) {
			t.Errorf("%.20q... (%d bytes) cached", c, len(c))
		}
	}
	closePool(t, p)
}

// TestHelperExitsWithItsSupervisor: a helper whose requests pipe closes
// (the supervisor died, or closed it) exits.
func TestHelperExitsWithItsSupervisor(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	if _, err := p.transform(context.Background(), Goja, "1"); err != nil {
		t.Fatal(err)
	}
	h := p.take()
	_ = h.in.Close()
	st, err := h.cmd.Process.Wait()
	if err != nil || !st.Success() {
		t.Errorf("helper after its input closed: %v, %v", st, err)
	}
	closeAll(h.out, h.stderr)
}

// closePool ends p's idle helpers as a closed input does, and waits.
func closePool(t *testing.T, p *pool) {
	t.Helper()
	for h := p.take(); h != nil; h = p.take() {
		_ = h.in.Close()
		if _, err := h.cmd.Process.Wait(); err != nil && !errors.Is(err, syscall.ECHILD) {
			t.Error(err)
		}
		closeAll(h.out, h.stderr)
	}
}

// TestSyntaxErrorOfALongLine: a syntax error on a line of megabytes (a
// minified program) comes back as one, its line cut around the column: it
// was an answer over MaxOutput (every '<' escaped to six bytes) that
// killed the helper and said UNAVAILABLE.
func TestSyntaxErrorOfALongLine(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	code := `let s = "` + strings.Repeat("<", 1500000) + `"; )`
	_, err := p.transform(context.Background(), Goja, code)
	var se *transform.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("%v; want a SyntaxError", err)
	}
	if se.Line != 1 || se.Column != 1500013 || len(se.LineText) > 4*maxExcerpt+8 || !strings.HasSuffix(se.LineText, `"; )`) || !strings.HasPrefix(se.LineText, "…") {
		t.Errorf("syntax error at %d:%d, line of %d bytes %.40q…", se.Line, se.Column, len(se.LineText), se.LineText)
	}
	if len(p.idle) != 1 {
		t.Errorf("%d idle helpers; want the helper kept", len(p.idle))
	}
	closePool(t, p)
}

// slowCode takes esbuild half a minute to parse (its parse of nested
// TypeScript generics is quadratic: 1000, 2000, 3000 levels took 1, 4
// and 13 s), far past the helper's time for 12 KB of code.
var slowCode = strings.Repeat("a<(", 4000)

// TestOwnersShareTheHelpers: an owner whose slow code holds a helper
// gets no second one (its next request waits), while another owner's
// transform goes through at once; and a slow transform ends at its
// size's CPU time (CPUTimeBase and CPUTimePerKiB), not at Timeout.
func TestOwnersShareTheHelpers(t *testing.T) {
	p := newPool(2, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	alice, bob := WithOwner(context.Background(), "alice"), WithOwner(context.Background(), "bob")
	slow := func(ctx context.Context, tag string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := p.transform(ctx, Goja, "// "+tag+"\n"+slowCode)
			done <- err
		}()
		return done
	}
	first := slow(alice, "first")
	if !waitUntil(func() bool { return len(p.slots) == 1 }) {
		t.Fatal("alice's first transform did not start")
	}
	second := slow(alice, "second")
	if !waitUntil(func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.owners["alice"] != nil && p.owners["alice"].refs == 2
	}) {
		t.Fatal("alice's second transform was not admitted")
	}
	if js, err := p.transform(bob, Goja, "console.log('bob')"); err != nil || !strings.Contains(js, "bob") {
		t.Fatalf("bob's transform: %q, %v", js, err)
	}
	select {
	case err := <-first:
		t.Fatalf("alice's slow transform ended (%v) before bob's quick one", err)
	case err := <-second:
		t.Fatalf("alice's second transform ended (%v) while her first held her helper", err)
	default:
	}
	var le *LimitError
	if err := <-first; !errors.As(err, &le) || le.Bound != "cpu" || time.Duration(le.Limit) != cpuFor(len(slowCode)+9, MaxCPUTime) {
		t.Errorf("alice's slow transform: %v; want a LimitError of %v of CPU time", err, cpuFor(len(slowCode)+9, MaxCPUTime))
	}
	<-second
	closePool(t, p)
}

// TestQueuedBytesBound: past MaxQueuedBytes of code waiting or in a
// transform, a request is ErrBusy instead of waiting with its code.
func TestQueuedBytesBound(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	p.maxQueue = 1000
	if _, err := p.transform(context.Background(), Goja, "// "+strings.Repeat("x", 1000)); !errors.Is(err, ErrBusy) {
		t.Errorf("1003 bytes past a bound of 1000: %v; want ErrBusy", err)
	}
	if _, err := p.transform(context.Background(), Goja, "console.log(1)"); err != nil {
		t.Errorf("after a refusal: %v", err)
	}
	// One owner's waiting code is bounded apart: it cannot take the
	// queue from another owner.
	p.maxQueue, p.maxOwnerQueue = 4000, 1000
	p.slots <- struct{}{} // the only helper is busy: requests wait
	alice, cancel := context.WithCancel(WithOwner(context.Background(), "alice"))
	waiting := make(chan error, 1)
	go func() {
		_, err := p.transform(alice, Goja, "// "+strings.Repeat("a", 900))
		waiting <- err
	}()
	if !waitUntil(func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.queued == 903 }) {
		t.Fatal("alice's request is not waiting")
	}
	if _, err := p.transform(alice, Goja, "// "+strings.Repeat("b", 200)); !errors.Is(err, ErrBusy) {
		t.Errorf("alice past her share of the queue: %v; want ErrBusy", err)
	}
	bob, cancelBob := context.WithTimeout(WithOwner(context.Background(), "bob"), 50*time.Millisecond)
	defer cancelBob()
	if _, err := p.transform(bob, Goja, "// "+strings.Repeat("c", 900)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("bob's request, queued beside alice's: %v; want it to wait (then its deadline)", err)
	}
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("alice's waiting request: %v", err)
	}
	<-p.slots
	if p.queued != 0 || len(p.owners) != 0 {
		t.Errorf("%d bytes and %d owners counted after the transforms", p.queued, len(p.owners))
	}
	closePool(t, p)
}

// TestIdleHelperKilled: an idle helper that something else killed is
// replaced for the next request, which succeeds.
func TestIdleHelperKilled(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	if _, err := p.transform(context.Background(), Goja, "1"); err != nil {
		t.Fatal(err)
	}
	dead := p.idle[0]
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Dead, not yet reaped: a zombie with no thread left, whose pipes are
	// closed (a leader shows Z while its other threads, which share its
	// descriptors, still exit). Killed during the request's write, it
	// would be that request's failure, UNAVAILABLE with a retry.
	pid := dead.cmd.Process.Pid
	if !waitUntil(func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return strings.Contains(string(b), ") Z ") && len(tasks) <= 1
	}) {
		t.Fatal("the killed helper did not die")
	}
	if js, err := p.transform(context.Background(), Goja, "console.log('after')"); err != nil || !strings.Contains(js, "after") {
		t.Fatalf("after the idle helper was killed: %q, %v", js, err)
	}
	if len(p.idle) != 1 || p.idle[0] == dead {
		t.Errorf("idle helpers %v; want a new one", p.idle)
	}
	closePool(t, p)
}

// TestHelperRunsUnprivileged: a helper of a root process is nobody, with
// no capabilities and no_new_privs.
func TestHelperRunsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a helper drops root's privileges")
	}
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Minute})
	if _, err := p.transform(context.Background(), Goja, "1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.idle[0].cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ReplaceAll(string(b), " ", ""), "Groups:\t\n") {
		t.Errorf("helper has supplementary groups:\n%s", b)
	}
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "Gid:\t65534\t65534\t65534\t65534", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("helper status lacks %q:\n%s", want, b)
		}
	}
	closePool(t, p)
}

// TestOrphanedHelperEndsItself: a helper whose supervisor is gone (no
// one to kill it at the wall-clock backstop) ends itself watchdogSlack
// past it, not before.
func TestOrphanedHelperEndsItself(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: time.Millisecond})
	h, err := p.start()
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(h.out, h.stderr)
	// 12 s of CPU time for its 1 MiB: the wall-clock watchdog ends it
	// first, and the comment does not make the parse any quicker.
	code := "//" + strings.Repeat("x", 1<<20) + "\n" + slowCode
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(code)))
	hdr[4] = byte(Goja)
	start := time.Now() // before the helper can read the request and start its watchdog
	if _, err := h.in.Write(append(hdr[:], code...)); err != nil {
		t.Fatal(err)
	}
	_ = h.in.Close()                // an answer would be followed by a clean exit (0)
	st, err := h.cmd.Process.Wait() // nobody reads, nobody kills
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if st.ExitCode() != exitWatchdog || took < watchdogSlack || took > watchdogSlack+10*time.Second {
		t.Errorf("orphaned helper: %v after %v; want exit %d after about %v", st, took, exitWatchdog, watchdogSlack)
	}
}

// waitUntil polls cond (a state of the pool, never a sleep in the hope
// that something happened) for up to 10 s.
func waitUntil(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
