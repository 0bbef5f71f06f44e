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
		if err := goleak.Find(goleak.IgnoreTopFunction(sandbox.SpawnerGoroutine)); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
