package compat

import (
	"fmt"
	"os"
	"testing"

	"github.com/execfarm/execfarm/supervisor/sandbox"
	"go.uber.org/goleak"
)

// TestMain fails the run if the embedded supervisor leaves goroutines
// behind after it has been stopped.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores the goroutines a process keeps for its life once it
// has started a sandbox.
func leakOptions() []goleak.Option {
	var opts []goleak.Option
	for _, f := range sandbox.ProcessGoroutines {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	return opts
}
