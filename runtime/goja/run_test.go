package goja

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/deterministic/detertest"
	"github.com/execfarm/execfarm/runtime/jsconsole/consoletest"
	"github.com/execfarm/execfarm/runtime/transform"
)

// serveHelperEnv makes the test binary run Main (serve_linux_test.go).
const serveHelperEnv = "EXECFARM_TEST_GOJA_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveHelperEnv) == "1" {
		// The test binary as a kept runtime process (serve_test.go).
		os.Exit(Main(nil))
	}
	leakcheck.Main(m)
}

// syncBuffer is a goroutine-safe writer; written is closed on the first
// non-empty write.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	written chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{written: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) > 0 {
		b.once.Do(func() { close(b.written) })
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, program string, opts Options) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Run(ctx, program, &out, &errOut, opts)
	return result{out.String(), errOut.String(), code}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		program  string
		stdout   string
		stderr   string // exact unless stderrSub
		errSub   []string
		exitCode int
	}{
		{
			name:    "console routing",
			program: `console.log("log"); console.info("info"); console.debug("debug"); console.warn("warn"); console.error("error", 1)`,
			stdout:  "log\ninfo\ndebug\nwarn\n",
			stderr:  "error 1\n",
		},
		{
			name:    "formatting",
			program: `console.log("s", 1, 1.5, -0, true, null, undefined, 10n, [1, "a"], { a: 1, "b-c": { d: [2] } }, () => 1, new Map([["k", 1]]))`,
			stdout:  "s 1 1.5 -0 true null undefined 10n [ 1, 'a' ] { a: 1, 'b-c': { d: [ 2 ] } } [Function (anonymous)] Map(1) { 'k' => 1 }\n",
		},
		{
			name:    "format directives",
			program: `console.log("%s=%d %i %j %o %%", "x", 4.5, 4.5, { a: [1] }, "q", "rest")`,
			stdout:  "x=4.5 4 {\"a\":[1]} 'q' % rest\n",
		},
		{
			name:    "timers run in due order, FIFO for equal delays",
			program: `setTimeout(() => console.log("t20"), 20); setTimeout(() => console.log("t0a"), 0); setTimeout(() => console.log("t0b"), 0); setTimeout(() => console.log("t5"), 5); console.log("sync")`,
			stdout:  "sync\nt0a\nt0b\nt5\nt20\n",
		},
		{
			name: "microtasks before immediates, interval and clear",
			program: `setImmediate((a) => {
  console.log("immediate", a);
  let n = 0; const iv = setInterval(() => { n++; console.log("tick", n); if (n === 3) clearInterval(iv) }, 1);
}, "arg");
Promise.resolve().then(() => console.log("micro")); queueMicrotask(() => console.log("qm"));
const t = setTimeout(() => console.log("never"), 1); clearTimeout(t); console.log("sync")`,
			stdout: "sync\nmicro\nqm\nimmediate arg\ntick 1\ntick 2\ntick 3\n",
		},
		{
			name:    "top-level await",
			program: `await new Promise(r => setTimeout(r, 10)); console.log("done")`,
			stdout:  "done\n",
		},
		{
			name:    "async functions",
			program: "async function f(x) { await null; return x * 2 }\nconst v = await f(21); console.log(`v=${v}`)",
			stdout:  "v=42\n",
		},
		{
			name:     "uncaught error",
			program:  "console.log(\"before\")\nfunction f() {\n  throw new TypeError(\"boom\")\n}\nf()\nconsole.log(\"after\")",
			stdout:   "before\n",
			errSub:   []string{"Uncaught TypeError: boom\n", "    at f (main.js:3:9)\n", "    at main.js:5:"},
			exitCode: ExitUncaught,
		},
		{
			name:     "uncaught error in a timer stops the program",
			program:  `setTimeout(() => { throw new RangeError("late") }, 1); setTimeout(() => console.log("not reached"), 50)`,
			errSub:   []string{"Uncaught RangeError: late"},
			exitCode: ExitUncaught,
		},
		{
			name:     "unhandled rejection",
			program:  `Promise.reject(new Error("nope")); setTimeout(() => console.log("not reached"), 50)`,
			errSub:   []string{"Uncaught Error: nope"},
			exitCode: ExitUncaught,
		},
		{
			name:     "rejected top-level await",
			program:  "await Promise.resolve()\nthrow new Error(\"after await\")",
			errSub:   []string{"Uncaught Error: after await", "main.js:2:"},
			exitCode: ExitUncaught,
		},
		{
			name:    "handled rejection is fine",
			program: `const p = Promise.reject(new Error("x")); p.catch(e => console.log("caught", e.message))`,
			stdout:  "caught x\n",
		},
		{
			name:     "thrown non-error",
			program:  `throw "str"`,
			stderr:   "Uncaught 'str'\n",
			exitCode: ExitUncaught,
		},
		{
			name:     "require is refused",
			program:  `try { require("fs") } catch (e) { console.log(e.message, e.code) }; require("child_process")`,
			stdout:   "Module 'fs' not available in sandbox MODULE_NOT_FOUND\n",
			errSub:   []string{"Uncaught Error: Module 'child_process' not available in sandbox"},
			exitCode: ExitUncaught,
		},
		{
			name:     "process.exit",
			program:  `console.log("a"); setTimeout(() => { process.exit(7); console.log("no") }, 1); setTimeout(() => console.log("no"), 100)`,
			stdout:   "a\n",
			exitCode: 7,
		},
		{
			name:     "process.exit after await",
			program:  `await null; try { process.exit(3) } finally { console.log("no") }`,
			exitCode: 3,
		},
		{
			name:     "process.exitCode",
			program:  `process.exitCode = 4; console.log(typeof process.env, process.platform)`,
			stdout:   "object linux\n",
			exitCode: 4,
		},
		{
			name:    "unref timer does not keep the loop alive",
			program: `setTimeout(() => console.log("no"), 60000).unref(); console.log("x")`,
			stdout:  "x\n",
		},
		{
			name:     "compile error",
			program:  "let a = 1\nlet b = 2 c",
			stderr:   "Uncaught SyntaxError: main.js: Line 2:11 Unexpected identifier\n",
			exitCode: ExitUncaught,
		},
		{
			name:    "empty program",
			program: "",
		},
		{
			name:    "group and count",
			program: `console.group("g"); console.log("in"); console.count(); console.groupEnd(); console.count(); console.assert(1 === 2, "bad")`,
			stdout:  "g\n  in\n  default: 1\ndefault: 2\n",
			stderr:  "Assertion failed: bad\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, tt.program, Options{})
			if got.code != tt.exitCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.exitCode, got.stderr)
			}
			if got.stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", got.stdout, tt.stdout)
			}
			if tt.errSub == nil && got.stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", got.stderr, tt.stderr)
			}
			for _, s := range tt.errSub {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, got.stderr)
				}
			}
		})
	}
}

// TestDeterministic: a deterministic run's clock starts at
// deterministic.EpochMs, moves only when a timer fires (to when it was
// due, whatever the real time spent), timers fire in the order of that
// clock, and Math.random is deterministic.NewRand's: detertest's program
// prints detertest.Want(seed), the same for one seed, other values for
// another. Without Deterministic the clock is the real one.
func TestDeterministic(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		if got := run(t, detertest.Program, Options{Deterministic: true, Seed: seed}); got.stdout != detertest.Want(seed) || got.code != 0 {
			t.Errorf("seed %d: exit %d, printed\n%s\nwant\n%s%s", seed, got.code, got.stdout, detertest.Want(seed), got.stderr)
		}
	}
	if detertest.Want(1) == detertest.Want(2) {
		t.Error("seeds 1 and 2 print the same")
	}
	d := run(t, `console.log(Date.now())`, Options{})
	if strings.HasPrefix(d.stdout, "946684800000") {
		t.Errorf("clock fixed without Deterministic: %q", d.stdout)
	}
}

// runAsync starts Run and returns its exit code on a channel.
func runAsync(ctx context.Context, program string, stdout, stderr *syncBuffer) <-chan int {
	done := make(chan int, 1)
	go func() { done <- Run(ctx, program, stdout, stderr, Options{}) }()
	return done
}

func waitExit(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
		return -1
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name    string
		program string
	}{
		// The output reaches the writer through the delayed flush while the
		// script spins.
		{"busy loop", `console.log("started"); while (true) {}`},
		{"busy loop after await", `await null; console.log("started"); for (;;) {}`},
		{"busy loop in a timer", `setTimeout(() => { console.log("started"); while (true) {} }, 1)`},
		// The output is flushed when the loop goes idle waiting on the timer:
		// this is what makes a program printing every 200 ms stream.
		{"idle on a long timer", `console.log("started"); setTimeout(() => console.log("no"), 60000)`},
		{"idle on an interval", `setInterval(() => console.log("started"), 5)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, errOut := newSyncBuffer(), newSyncBuffer()
			done := runAsync(ctx, tt.program, out, errOut)
			select {
			case <-out.written:
			case code := <-done:
				t.Fatalf("Run returned %d before cancel; stderr %q", code, errOut.String())
			case <-time.After(10 * time.Second):
				t.Fatal("no output streamed while the program runs")
			}
			cancel()
			if code := waitExit(t, done); code != ExitCancelled {
				t.Errorf("exit code = %d, want %d", code, ExitCancelled)
			}
			if !strings.HasPrefix(out.String(), "started\n") || strings.Contains(out.String(), "no") {
				t.Errorf("stdout = %q", out.String())
			}
		})
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if code := Run(ctx, `console.log("x")`, &out, &out, Options{}); code != ExitCancelled || out.Len() != 0 {
		t.Errorf("Run = %d, output %q; want %d and nothing", code, out.String(), ExitCancelled)
	}
}

func TestLargeOutputIsNotLost(t *testing.T) {
	got := run(t, `for (let i = 0; i < 20000; i++) console.log("line", i)`, Options{})
	lines := strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n")
	if len(lines) != 20000 || lines[19999] != "line 19999" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// Unbounded recursion ends the program at once with V8's error (in goja a
// stack overflow cannot be caught), instead of growing to the memory limit.
func TestRecursionEndsWithRangeError(t *testing.T) {
	var out, errOut strings.Builder
	code := Run(context.Background(), "function f(n){ return f(n+1) + 1 }\nf(0)", &out, &errOut, Options{})
	if code != ExitUncaught || !strings.Contains(errOut.String(), "RangeError: Maximum call stack size exceeded") {
		t.Fatalf("exit %d stdout %q stderr %q", code, out.String(), errOut.String())
	}
}

// TestConsoleChannel: the shared program (package consoletest) gives the
// console channel and raw output node gives for it.
func TestConsoleChannel(t *testing.T) {
	tc, err := consoletest.Load()
	if err != nil {
		t.Fatal(err)
	}
	js, err := transform.TypeScript(tc.Program)
	if err != nil {
		t.Fatal(err)
	}
	var channel bytes.Buffer
	r := run(t, js, Options{Console: &channel})
	if r.code != ExitUncaught {
		t.Errorf("exit %d, want %d", r.code, ExitUncaught)
	}
	for _, d := range tc.Check(r.stdout, r.stderr, channel.Bytes()) {
		t.Error(d)
	}
}
