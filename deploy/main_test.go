package deploy

import (
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
