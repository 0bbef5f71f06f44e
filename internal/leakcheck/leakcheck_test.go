package leakcheck

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// runFunc is a TestingM whose tests are one function.
type runFunc func() int

func (f runFunc) Run() int { return f() }

// TestRun: a clean run passes; a goroutine or a descriptor left by the
// tests fails it, naming the leak; a failing run is reported as it is;
// an ignored descriptor passes.
func TestRun(t *testing.T) {
	var w bytes.Buffer
	if code := Run(runFunc(func() int { return 0 }), &w); code != 0 {
		t.Fatalf("clean run: %d, %s", code, &w)
	}
	if code := Run(runFunc(func() int { return 3 }), &w); code != 3 {
		t.Fatalf("failing run: %d, want 3", code)
	}

	w.Reset()
	stop := make(chan struct{})
	code := Run(runFunc(func() int {
		go func() { <-stop }()
		return 0
	}), &w)
	close(stop)
	if code != 1 || !strings.Contains(w.String(), "leaked goroutines") {
		t.Fatalf("goroutine left: %d, %q", code, &w)
	}

	for _, ignore := range []bool{false, true} {
		w.Reset()
		var files []*os.File
		var opts []Option
		if ignore {
			opts = append(opts, IgnoreFDs(func() []int { return []int{int(files[0].Fd()), int(files[1].Fd())} }))
		}
		code := Run(runFunc(func() int {
			r, wr, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, r, wr)
			return 0
		}), &w, opts...)
		for _, f := range files {
			f.Close()
		}
		switch {
		case ignore && code != 0:
			t.Errorf("pipe left and ignored: %d, %q", code, &w)
		case !ignore && (code != 1 || !strings.Contains(w.String(), "leaked file descriptors") || !strings.Contains(w.String(), "pipe:")):
			t.Errorf("pipe left: %d, %q", code, &w)
		}
	}
}
