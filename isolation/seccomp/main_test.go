package seccomp

import (
	"os"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// helperEnv makes the test binary act as the helper process: load the filter
// (helperFiltered) or not (helperControl), run the probes of
// helper_linux_test.go and print their results.
const (
	helperEnv      = "EXECFARM_SECCOMP_TEST_HELPER"
	helperFiltered = "filtered"
	helperControl  = "control"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	leakcheck.Main(m)
}
