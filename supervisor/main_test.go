package supervisor

import (
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// New starts the fork server (readiness, health.go): what the process
// keeps for its life once it has is no leak.
func TestMain(m *testing.M) {
	leakcheck.Main(m, leakcheck.IgnoreGoroutines(sandbox.ProcessGoroutines...), leakcheck.IgnoreFDs(sandbox.ProcessFDs), leakcheck.IgnoreFDs(transformer.ProcessFDs))
}
