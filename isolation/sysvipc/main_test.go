package sysvipc

import (
	"os"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// helperEnv makes the test binary act as the helper process of
// apply_linux_test.go: a process in an IPC namespace of its own.
const helperEnv = "EXECFARM_SYSVIPC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	leakcheck.Main(m)
}
