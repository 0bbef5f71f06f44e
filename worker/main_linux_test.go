package worker

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine running, except those a
// worker keeps for its life (the forking thread, the file thread, the
// reaper) and the in-process test server's (sessionWorker), and removes
// that server's root.
func TestMain(m *testing.M) {
	code := m.Run()
	if testServer.root != "" {
		os.RemoveAll(testServer.root)
	}
	if code == 0 {
		err := goleak.Find(
			goleak.IgnoreAnyFunction("github.com/execfarm/execfarm/worker.(*forker).start.func1"),
			goleak.IgnoreAnyFunction("github.com/execfarm/execfarm/worker.(*fileThread).start.func1"),
			goleak.IgnoreAnyFunction("github.com/execfarm/execfarm/worker.(*server).reap"),
			goleak.IgnoreAnyFunction("os/signal.signal_recv"),
			goleak.IgnoreAnyFunction("github.com/execfarm/execfarm/worker.(*testWorker).start.func1"),
			goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Server).keepalive"),
			goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*controlBuffer).get"),
			goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
			goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}
