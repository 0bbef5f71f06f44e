package sandbox

import (
	"fmt"
	"os"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/worker"
	"github.com/execfarm/execfarm/worker/plugin"
)

// The test binary is also the worker and the fork server of the sandboxes
// its tests start (go-plugin's and runc's helper-process pattern): the
// fork server runs it with forkserver.Arg, and a worker finds its
// configuration in plugin.EnvConfig.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == forkserver.Arg {
		os.Exit(forkserver.Main())
	}
	if os.Getenv(plugin.EnvConfig) != "" {
		os.Exit(worker.Main())
	}
	leakcheck.Main(suite{m}, leakcheck.IgnoreGoroutines(ProcessGoroutines...), leakcheck.IgnoreFDs(ProcessFDs))
}

// suite runs the tests, then removes what they set up on the host
// (testHost) and fails when they left anything behind.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	code := s.m.Run()
	if err := testHost.teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: teardown:", err)
		code = 1
	}
	return code
}
