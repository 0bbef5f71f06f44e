package execution

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// noSandbox is a Placement that never yields a sandbox: Acquire reports
// each call on asked, then fails with err, or, when err is nil, blocks
// until the run is stopped.
type noSandbox struct {
	err   error
	asked chan string
}

func (p *noSandbox) Acquire(ctx context.Context, id string, _ sandbox.Spec) (Sandbox, error) {
	p.asked <- id
	if p.err != nil {
		return nil, p.err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *noSandbox) Kill(Sandbox) error { panic("Kill without a sandbox") }

func (p *noSandbox) Release(string, Sandbox, bool, func()) {
	panic("Release without a sandbox")
}

// newRunner returns a Runner with slots slots and queue places, no
// sandbox configuration (its runs go to a test Placement), and a
// Shutdown at cleanup.
func newRunner(t *testing.T, slots, queue int) *Runner {
	t.Helper()
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: slots, QueueSize: queue})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Sandbox: &sandbox.Config{}, Defaults: limits.Default(), Registry: registry.New(registry.Config{}), Scheduler: sched})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(time.Second) })
	return r
}

func job() *Job {
	return &Job{Runtime: "shell", Request: &workerv1.RunRequest{}, Limits: limits.Default(), Code: "true"}
}

func wait(t *testing.T, e *registry.Execution) registry.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := e.Wait(ctx)
	if err != nil {
		t.Fatalf("execution %s did not end: %v", e.ID(), err)
	}
	return res
}

// submitStuck submits a job whose sandbox never comes (p blocks until
// the run is stopped) and returns once the run asks p for it.
func submitStuck(t *testing.T, r *Runner, p *noSandbox) *registry.Execution {
	t.Helper()
	e, err := r.SubmitIn(p, job())
	if err != nil {
		t.Fatal(err)
	}
	<-p.asked
	return e
}

// TestRunWithoutSandbox follows a run through the steps that end it before
// any program runs: the sandbox's start fails, or a cancel comes while it
// is queued or while its sandbox starts. Each ends with its own result
// and frees its slot.
func TestRunWithoutSandbox(t *testing.T) {
	t.Run("start fails", func(t *testing.T) {
		r := newRunner(t, 1, 1)
		p := &noSandbox{err: errors.New("boom"), asked: make(chan string, 1)}
		e, err := r.SubmitIn(p, job())
		if err != nil {
			t.Fatal(err)
		}
		res := wait(t, e)
		if res.State != registry.StateFailed || res.Reason != registry.ReasonInternal || res.Error != "sandbox start failed: boom" || res.SandboxID != "" {
			t.Fatalf("result %+v, want FAILED/internal \"sandbox start failed: boom\"", res)
		}
		if x, ok := res.Extra.(Extra); !ok || x.Runtime != "shell" || x.Limits != limits.Default() {
			t.Errorf("Extra = %#v, want the job's runtime and limits", res.Extra)
		}
	})
	t.Run("the held sandbox ended", func(t *testing.T) {
		r := newRunner(t, 1, 1)
		p := &noSandbox{err: fmt.Errorf("%w: deleted", ErrSandboxGone), asked: make(chan string, 1)}
		e, err := r.SubmitIn(p, job())
		if err != nil {
			t.Fatal(err)
		}
		res := wait(t, e)
		if res.State != registry.StateCancelled || res.Reason != registry.ReasonCancelled || res.Error != registry.CancelledText {
			t.Fatalf("result %+v, want CANCELLED/cancelled", res)
		}
	})
	t.Run("cancel while the sandbox starts", func(t *testing.T) {
		r := newRunner(t, 1, 1)
		e := submitStuck(t, r, &noSandbox{asked: make(chan string, 1)})
		if _, err := e.Cancel(); err != nil {
			t.Fatal(err)
		}
		res := wait(t, e)
		if res.State != registry.StateCancelled || res.Reason != registry.ReasonCancelled || res.Error != "Execution was cancelled" {
			t.Fatalf("result %+v, want CANCELLED/cancelled", res)
		}
	})
	t.Run("cancel while queued", func(t *testing.T) {
		r := newRunner(t, 1, 1)
		p := &noSandbox{asked: make(chan string, 2)}
		first := submitStuck(t, r, p) // it holds the only slot
		queued, err := r.SubmitIn(p, job())
		if err != nil {
			t.Fatal(err)
		}
		if pos := r.QueuePosition(queued.ID()); pos != 1 {
			t.Fatalf("queue position %d, want 1", pos)
		}
		if _, err := r.SubmitIn(p, job()); !errors.Is(err, scheduler.ErrQueueFull) {
			t.Fatalf("third submission: %v, want ErrQueueFull", err)
		}
		if _, err := queued.Cancel(); err != nil {
			t.Fatal(err)
		}
		res := wait(t, queued)
		if res.State != registry.StateCancelled || res.Error != "Execution was cancelled" {
			t.Fatalf("queued result %+v, want CANCELLED \"Execution was cancelled\"", res)
		}
		if _, err := first.Cancel(); err != nil {
			t.Fatal(err)
		}
		wait(t, first)
		// A run gives its slot back as its goroutine ends, just after it
		// published the result; Shutdown waits for every run's goroutine.
		if err := r.Shutdown(time.Second); err != nil {
			t.Fatal(err)
		}
		if running, waiting := r.sched.Counts(); running != 0 || waiting != 0 {
			t.Fatalf("scheduler holds %d running, %d queued after both ended", running, waiting)
		}
	})
}

// TestShutdownKillsWhatIsLeft: a run still starting when the grace ends is
// stopped as cancelled, Shutdown says executions were killed, and a
// submission after it is refused with ErrShuttingDown.
func TestShutdownKillsWhatIsLeft(t *testing.T) {
	r := newRunner(t, 1, 1)
	p := &noSandbox{asked: make(chan string, 1)}
	e := submitStuck(t, r, p)
	if err := r.Shutdown(0); err == nil {
		t.Error("Shutdown(0) with a running execution returned nil")
	}
	if res := wait(t, e); res.State != registry.StateCancelled {
		t.Errorf("result %+v, want CANCELLED", res)
	}
	if !r.Closing() {
		t.Error("Closing() = false after Shutdown")
	}
	if _, err := r.SubmitIn(p, job()); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Submit after Shutdown: %v, want ErrShuttingDown", err)
	}
}
