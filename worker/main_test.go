//go:build linux

package worker

import (
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// TestMain checks that no test leaves a goroutine or descriptor behind,
// except what a worker keeps for its life (its forking thread, its file
// thread and that thread's root descriptor, the reaper and its signal
// subscription), which the in-process session worker of the tests
// (sessionWorker) started.
func TestMain(m *testing.M) {
	leakcheck.Main(suite{m},
		leakcheck.IgnoreGoroutines(
			"github.com/execfarm/execfarm/worker.(*forker).start.func1",
			"github.com/execfarm/execfarm/worker.(*fileThread).start.func1",
			"github.com/execfarm/execfarm/worker.(*server).reap",
			"os/signal.signal_recv",
		),
		leakcheck.IgnoreFDs(testServer.lifelongFDs),
	)
}

// suite runs the tests, then stops the in-process session worker's gRPC
// server and removes its root.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	code := s.m.Run()
	testServer.stop()
	return code
}
