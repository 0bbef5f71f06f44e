package landlock

import (
	"os"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// helperEnv makes the test binary act as the helper process of
// restrict_linux_test.go; its value is the directory to work in.
const helperEnv = "EXECFARM_LANDLOCK_TEST_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	leakcheck.Main(m)
}
