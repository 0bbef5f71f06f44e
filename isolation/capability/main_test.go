package capability

import (
	"os"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// helperEnv makes the test binary act as the helper process of
// restrict_linux_test.go: it restricts its own capabilities and reports.
const helperEnv = "EXECFARM_CAPABILITY_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	leakcheck.Main(m)
}
