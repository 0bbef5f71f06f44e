package compat

import (
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// TestMain fails the run if the embedded supervisors leave goroutines or
// descriptors behind once they have been stopped.
func TestMain(m *testing.M) {
	leakcheck.Main(m, leakcheck.IgnoreGoroutines(sandbox.ProcessGoroutines...), leakcheck.IgnoreFDs(sandbox.ProcessFDs), leakcheck.IgnoreFDs(transformer.ProcessFDs))
}
