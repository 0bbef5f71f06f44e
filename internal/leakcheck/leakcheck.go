// Package leakcheck is the TestMain of every package that starts
// goroutines or opens file descriptors: Main runs the package's tests and
// then fails the run when a goroutine (goleak) or a file descriptor
// (/proc/self/fd) outlives them. It is for tests only.
//
// A package's TestMain dispatches its helper processes first, if it has
// any, then calls Main:
//
//	func TestMain(m *testing.M) {
//		if mode := os.Getenv(helperEnv); mode != "" {
//			os.Exit(runHelper(mode))
//		}
//		leakcheck.Main(m)
//	}
//
// The checks run only after a passing, non-fuzzing run (the fuzzing
// engine keeps pipes and goroutines of its own). Goroutines are checked
// first: goleak waits a little for goroutines that are ending, and
// descriptors are often closed by the goroutines that end. Descriptors
// the Go runtime opens once for the process's life (its network poller)
// are not leaks; the descriptor check needs Linux's /proc and is a no-op
// elsewhere.
package leakcheck

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/goleak"
)

// TestingM is what Main runs: a *testing.M, or a wrapper whose Run sets a
// suite up around the tests and tears it down, so that the checks see
// what the teardown left.
type TestingM interface {
	Run() int
}

// Option changes what Main tolerates.
type Option func(*config)

type config struct {
	goroutines []goleak.Option
	fds        []func() []int
}

// IgnoreGoroutines tolerates goroutines with any of funcs (fully
// qualified function names) on their stack: those a process keeps for its
// life once it used some facility (sandbox.ProcessGoroutines).
func IgnoreGoroutines(funcs ...string) Option {
	return func(c *config) {
		for _, f := range funcs {
			c.goroutines = append(c.goroutines, goleak.IgnoreAnyFunction(f))
		}
	}
}

// IgnoreFDs tolerates the descriptors whose numbers fds returns, called
// after the tests: those a process keeps for its life once it used some
// facility (sandbox.ProcessFDs), as IgnoreGoroutines.
func IgnoreFDs(fds func() []int) Option {
	return func(c *config) { c.fds = append(c.fds, fds) }
}

// runtimeFDs are links of descriptors the Go runtime opens on first use
// and keeps: the network poller's epoll instance and its wake-up eventfd
// (or pipe). /proc/ links are the fd directory read by the check itself.
var runtimeFDs = []string{"anon_inode:[eventpoll]", "anon_inode:[eventfd]", "/proc/"}

// Main runs m, checks for leaks and exits with the result.
func Main(m TestingM, opts ...Option) {
	os.Exit(Run(m, os.Stderr, opts...))
}

// Run runs m and, when it passed and no fuzzing engine ran, checks that it
// left no goroutine and no new descriptor; each leak is reported on w and
// makes the result 1. It returns m's result otherwise.
func Run(m TestingM, w io.Writer, opts ...Option) int {
	var c config
	for _, o := range opts {
		o(&c)
	}
	before := openFDs()
	code := m.Run()
	if code != 0 || fuzzing() {
		return code
	}
	if err := goleak.Find(c.goroutines...); err != nil {
		fmt.Fprintf(w, "leakcheck: leaked goroutines: %v\n", err)
		code = 1
	}
	after := openFDs()
	for _, f := range c.fds {
		for _, fd := range f() {
			delete(after, strconv.Itoa(fd))
		}
	}
	if leaked := newFDs(before, after, runtimeFDs); len(leaked) > 0 {
		fmt.Fprintf(w, "leakcheck: leaked file descriptors: %s\n", strings.Join(leaked, ", "))
		code = 1
	}
	return code
}

// fuzzing reports whether the test binary runs a fuzzing engine or one
// of its workers.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// openFDs maps each open descriptor to its /proc/self/fd link; empty where
// there is no /proc.
func openFDs() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out[e.Name()] = target
	}
	return out
}

// newFDs returns "fd -> link" for each descriptor of after that before did
// not hold with the same link, and whose link starts with none of ignore;
// sorted.
func newFDs(before, after map[string]string, ignore []string) []string {
	var out []string
	for fd, target := range after {
		if before[fd] == target || slices.ContainsFunc(ignore, func(p string) bool { return strings.HasPrefix(target, p) }) {
			continue
		}
		out = append(out, fd+" -> "+target)
	}
	slices.Sort(out)
	return out
}
