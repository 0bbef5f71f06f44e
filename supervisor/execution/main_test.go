package execution

import (
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/transformer"
)

func TestMain(m *testing.M) { leakcheck.Main(m, leakcheck.IgnoreFDs(transformer.ProcessFDs)) }
