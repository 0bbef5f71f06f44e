//go:build linux

package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestNoLeaksAfterManyExecutions runs 200 executions, 4 at a time (150
// quick shell and goja ones, 25 that time out, 25 cancelled), and checks
// that no sandbox state dir, cgroup, mount, process or file descriptor
// remains.
func TestNoLeaksAfterManyExecutions(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	// Establish the connection before counting: its socket stays open.
	if _, err := in.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}); err != nil {
		t.Fatalf("HealthCheck: %v", err)
	}
	settled(t, in) // the teardowns of the tests before
	if l := leftovers(in); len(l) > 0 {
		t.Fatalf("leftovers before the test:\n%s", strings.Join(l, "\n"))
	}
	fdsBefore, fdListBefore := openFDs(t), fdList()

	type kind int
	const (
		quickShell kind = iota
		quickGoja
		timeout
		cancelled
	)
	var jobs []kind
	for i := range 200 {
		switch {
		case i%8 == 3:
			jobs = append(jobs, timeout)
		case i%8 == 6:
			jobs = append(jobs, cancelled)
		case i%2 == 0:
			jobs = append(jobs, quickShell)
		default:
			jobs = append(jobs, quickGoja)
		}
	}
	work := make(chan int)
	var mu sync.Mutex
	var errs []string
	counts := map[sandboxv1.ExecutionState]int{}
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var state sandboxv1.ExecutionState
				switch jobs[i] {
				case quickShell, quickGoja:
					req := shellReq(fmt.Sprintf("echo %d", i), 0)
					if jobs[i] == quickGoja {
						req = gojaReq(fmt.Sprintf("console.log(%d)", i), 0)
					}
					resp, err := in.client.Execute(ctx, req)
					if err != nil {
						fail("job %d: %v", i, err)
						continue
					}
					if !resp.GetSuccess() || resp.GetOutput() != fmt.Sprintf("%d\n", i) {
						fail("job %d: %s", i, describe(resp))
					}
					state = resp.GetState()
				case timeout:
					resp, err := in.client.Execute(ctx, shellReq("sleep 5", 300))
					if err != nil {
						fail("job %d: %v", i, err)
						continue
					}
					if resp.GetState() != stateTimeout {
						fail("job %d: want TIMEOUT: %s", i, describe(resp))
					}
					state = resp.GetState()
				case cancelled:
					async, err := in.client.ExecuteAsync(ctx, shellReq("sleep 5", 0))
					if err != nil {
						fail("job %d: %v", i, err)
						continue
					}
					resp, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: async.GetExecutionId()})
					if err != nil {
						fail("job %d: cancel: %v", i, err)
						continue
					}
					state = resp.GetState()
					if resp.GetSuccess() && state == stateRunning {
						// CancelExecution waits a bounded time (10 s) for
						// the end; on a slow host (the cgroup v2 VM) a
						// sandbox still starting can take longer. The
						// cancel must still end it CANCELLED.
						st, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: async.GetExecutionId(), Wait: true})
						for err == nil && st.GetState() == stateRunning {
							st, err = in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: async.GetExecutionId(), Wait: true})
						}
						if err != nil {
							fail("job %d: wait after cancel: %v", i, err)
							continue
						}
						state = st.GetState()
					}
					if state != stateCancelled {
						fail("job %d: cancel ended in %s (%s)", i, state, resp.GetMessage())
					}
				}
				mu.Lock()
				counts[state]++
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	t.Logf("200 executions in %v: %v", took, counts)
	if len(errs) > 0 {
		t.Fatalf("%d executions went wrong, first ones:\n%s", len(errs), strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
	if counts[stateCompleted] != 150 || counts[stateTimeout] != 25 || counts[stateCancelled] != 25 {
		t.Fatalf("states %v; want 150 COMPLETED, 25 TIMEOUT, 25 CANCELLED", counts)
	}
	// Every execution has answered; once their teardowns, which may
	// follow the results, are over, nothing of them may be left.
	settled(t, in)
	if l := leftovers(in); len(l) > 0 {
		t.Fatalf("leftovers after 200 executions:\n%s", strings.Join(l, "\n"))
	}
	if fds := openFDs(t); fds != fdsBefore {
		t.Fatalf("open file descriptors: %d before, %d after\nbefore:\n%s\nafter:\n%s", fdsBefore, fds, fdListBefore, fdList())
	}
}
