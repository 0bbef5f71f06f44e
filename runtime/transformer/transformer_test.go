package transformer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	p := newPool(1, bounds{stack: 16 << 20, memory: MemoryLimit, timeout: time.Minute})
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
	p := newPool(1, bounds{stack: MaxStack, memory: 96 << 20, timeout: time.Minute})
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
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, timeout: time.Minute})
	code := strings.Repeat("a=1;", 1<<20) // 4 MiB, ~20 MB with its source map
	_, err := p.transform(context.Background(), Goja, code)
	var le *LimitError
	if !errors.As(err, &le) || le.Bound != "output" || le.Size <= MaxOutput || le.Limit != MaxOutput {
		t.Fatalf("%d bytes of a=1: %v; want a LimitError of the output", len(code), err)
	}
	if len(p.idle) != 1 {
		t.Fatalf("%d idle helpers after an output over the bound; want the same one back", len(p.idle))
	}
	// The idle helper gave the transform's heap back.
	if rss := residentBytes(t, p.idle[0].cmd.Process.Pid); rss > 64<<20 {
		t.Errorf("idle helper after a big transform: %d MiB resident", rss>>20)
	}
	closePool(t, p)
}

// residentBytes is pid's VmRSS.
func residentBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestTimeBound: a transform past the timeout kills its helper and is a
// LimitError of time.
func TestTimeBound(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, timeout: time.Millisecond})
	code := strings.Repeat("const a = [1, 2, 3].map(x => x * 2);\n", 50000)
	_, err := p.transform(context.Background(), Goja, code)
	var le *LimitError
	if !errors.As(err, &le) || le.Bound != "time" {
		t.Errorf("a 1 ms transform of %d bytes: %v; want a LimitError of time", len(code), err)
	}
	if len(p.idle) != 0 {
		t.Errorf("%d idle helpers after a timeout; want the killed one gone", len(p.idle))
	}
}

// TestWaitEndsWithTheContext: with every helper busy a caller waits only
// as long as its context, and a caller's context that ends during its
// transform ends the transform.
func TestWaitEndsWithTheContext(t *testing.T) {
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, timeout: time.Minute})
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
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, timeout: time.Minute})
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
	p := newPool(1, bounds{stack: MaxStack, memory: MemoryLimit, timeout: time.Minute})
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
