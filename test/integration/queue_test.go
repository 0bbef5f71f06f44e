//go:build linux

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

const statePending = sandboxv1.ExecutionState_EXECUTION_STATE_PENDING

// Uid slots of the queue tests' supervisors (the shared one has [0, 16),
// TestGracefulShutdown [16, 24)).
const (
	queueSlot    = 24
	deadlineSlot = 28
)

// queueSize sets supervisor.Config.QueueSize.
func queueSize(n int) func(*supervisor.Config) {
	return func(c *supervisor.Config) { c.QueueSize = n }
}

// startQueueInstance starts a supervisor of its own for a queue test and
// stops it when the test ends.
// TODO(warm pool): once supervisor.Config has WarmPool, pass it here as a
// parameter so the queue tests also run with a pool (a pool must not
// change admission: slots and queue places stay as configured).
func startQueueInstance(t *testing.T, name string, firstSlot, maxConcurrent, queue int) *instance {
	t.Helper()
	in, err := startInstance(name, firstSlot, 4, maxConcurrent, 10*time.Second, queueSize(queue))
	if err != nil {
		t.Fatalf("start supervisor: %v", err)
	}
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop supervisor %s: %v", name, err)
		}
	})
	return in
}

// TestQueueAdmitsPositionsAndRuns fills two slots and a queue of 50 with 60
// submissions: 52 are accepted, 8 refused RESOURCE_EXHAUSTED; the queued
// ones report positions 1..50; a queued execution that is cancelled never
// gets a sandbox and frees its place; every other accepted execution
// completes with its whole output.
//
// The programs wait until a wall-clock release time (the API has no way to
// signal into a sandbox) and then print; the test checks, rather than
// assumes, that its queue checks finished before the release.
func TestQueueAdmitsPositionsAndRuns(t *testing.T) {
	requireSandbox(t)
	const (
		slots, queue, submissions = 2, 50, 60
		hold                      = 5 * time.Second
	)
	in := startQueueInstance(t, "queue", queueSlot, slots, queue)
	ctx := callCtx(t)
	release := time.Now().Add(hold)
	code := func(i int) string {
		return fmt.Sprintf(`echo start-%d; while [ "$(date +%%s%%N)" -lt %d ]; do sleep 0.02; done; echo done-%d`, i, release.UnixNano(), i)
	}
	want := func(i int) string { return fmt.Sprintf("start-%d\ndone-%d\n", i, i) }

	type accepted struct {
		i        int
		id       string
		queuedAt time.Time
	}
	var ok []accepted
	refused := 0
	for i := range submissions {
		resp, err := in.client.ExecuteAsync(ctx, shellReq(code(i), 30_000))
		if status.Code(err) == codes.ResourceExhausted {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("ExecuteAsync %d: %v", i, err)
		}
		ok = append(ok, accepted{i: i, id: resp.GetExecutionId(), queuedAt: time.Now()})
		wantPos := int32(i - slots + 1) // positions count from 1
		if i >= slots && (resp.GetState() != statePending || resp.GetQueuePosition() != wantPos) {
			t.Fatalf("submission %d: state %s position %d, want PENDING at %d", i, resp.GetState(), resp.GetQueuePosition(), wantPos)
		}
	}
	if len(ok) != slots+queue || refused != submissions-slots-queue {
		t.Fatalf("accepted %d, refused %d; want %d and %d", len(ok), refused, slots+queue, submissions-slots-queue)
	}
	for k, a := range ok[slots:] {
		r, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: a.id})
		if err != nil {
			t.Fatalf("GetExecution: %v", err)
		}
		if r.GetState() != statePending || r.GetQueuePosition() != int32(k+1) {
			t.Fatalf("queued execution %d: state %s position %d, want PENDING at %d", a.i, r.GetState(), r.GetQueuePosition(), k+1)
		}
	}

	// Cancel the one at position 25: it ends CANCELLED without a sandbox,
	// the ones behind it move up, and its place takes one more submission.
	victim := ok[slots+24]
	// A lower bound of its queue wait: measured before the cancel is sent
	// (the wait ends when the server cancels, before the reply arrives).
	queuedFor := time.Since(victim.queuedAt)
	cresp, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: victim.id})
	if err != nil || !cresp.GetSuccess() {
		t.Fatalf("cancel queued execution: %v %v", cresp, err)
	}
	vr, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: victim.id, Wait: true})
	if err != nil {
		t.Fatalf("GetExecution(wait) of the cancelled one: %v", err)
	}
	vo := vr.GetResult().GetOutcome()
	if vr.GetState() != stateCancelled || vo.GetSandboxId() != "" || vr.GetOutput() != "" ||
		vo.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_CANCELLED {
		t.Errorf("cancelled while queued: state %s reason %s sandbox %q output %q; want CANCELLED, no sandbox, no output",
			vr.GetState(), vo.GetTerminationReason(), vo.GetSandboxId(), vr.GetOutput())
	}
	if vo.GetQueueWaitMs() < queuedFor.Milliseconds() {
		t.Errorf("cancelled while queued for at least %v: queue_wait_ms %d", queuedFor, vo.GetQueueWaitMs())
	}
	next := ok[slots+25]
	if r, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: next.id}); err != nil || r.GetQueuePosition() != 25 {
		t.Errorf("after the cancel, the execution behind it: position %d (%v), want 25", r.GetQueuePosition(), err)
	}
	extra, err := in.client.ExecuteAsync(ctx, shellReq(code(submissions), 30_000))
	if err != nil || extra.GetQueuePosition() != queue {
		t.Fatalf("submission into the freed place: %v %v, want accepted at position %d", extra, err, queue)
	}
	if _, err := in.client.ExecuteAsync(ctx, shellReq(code(submissions+1), 30_000)); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("submission into a full queue again: %v, want RESOURCE_EXHAUSTED", err)
	}
	if time.Now().After(release) {
		t.Fatalf("the queue checks took longer than %v: the programs may have run before they were checked; host too slow", hold)
	}

	ok = append(ok, accepted{i: submissions, id: extra.GetExecutionId()})
	sandboxes := map[string]int{}
	for k, a := range ok {
		if a.id == victim.id {
			continue
		}
		r, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: a.id, Wait: true})
		if err != nil {
			t.Fatalf("GetExecution(wait) %d: %v", a.i, err)
		}
		o := r.GetResult().GetOutcome()
		if r.GetState() != stateCompleted || r.GetOutput() != want(a.i) {
			t.Errorf("execution %d: state %s output %q error %q; want COMPLETED with %q", a.i, r.GetState(), r.GetOutput(), r.GetResult().GetError(), want(a.i))
		}
		if k >= slots && o.GetQueueWaitMs() <= 0 {
			t.Errorf("execution %d waited in the queue, but queue_wait_ms is %d", a.i, o.GetQueueWaitMs())
		}
		if prev, dup := sandboxes[o.GetSandboxId()]; dup || o.GetSandboxId() == "" {
			t.Errorf("execution %d: sandbox %q (also used by %d)", a.i, o.GetSandboxId(), prev)
		}
		sandboxes[o.GetSandboxId()] = a.i
	}
}

// TestClientDeadlineWhileQueued: a synchronous Execute whose deadline
// passes while it waits in the queue ends CANCELLED, without a sandbox, and
// gives its place back.
func TestClientDeadlineWhileQueued(t *testing.T) {
	requireSandbox(t)
	in := startQueueInstance(t, "deadline", deadlineSlot, 1, 1)
	ctx := callCtx(t)
	blocker, err := in.client.ExecuteAsync(ctx, shellReq(fmt.Sprintf("echo started; sleep %s4", sleepMarker), 30_000))
	if err != nil {
		t.Fatalf("ExecuteAsync blocker: %v", err)
	}
	t.Cleanup(func() {
		_, _ = in.client.CancelExecution(context.Background(), &sandboxv1.CancelExecutionRequest{ExecutionId: blocker.GetExecutionId()})
	})
	if r := waitOutput(ctx, t, in.client, blocker.GetExecutionId(), "started"); r.GetResult() != nil {
		t.Fatalf("blocker ended early: %v", r)
	}

	const code = "echo queued-past-its-deadline"
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = in.client.Execute(short, shellReq(code, 0))
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Execute with a 300 ms deadline behind a blocker: %v, want DEADLINE_EXCEEDED", err)
	}
	// The server cancels when it sees the call end; find the execution.
	var id string
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for id == "" {
		l, err := in.client.ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{States: []sandboxv1.ExecutionState{stateCancelled}})
		if err != nil {
			t.Fatalf("ListExecutions: %v", err)
		}
		for _, e := range l.GetExecutions() {
			if e.GetCodePreview() == code {
				id = e.GetExecutionId()
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the execution whose client deadline passed never ended CANCELLED")
		}
	}
	r, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	if err != nil {
		t.Fatalf("GetExecution: %v", err)
	}
	if o := r.GetResult().GetOutcome(); o.GetSandboxId() != "" || r.GetOutput() != "" {
		t.Errorf("cancelled while queued, yet sandbox %q output %q", o.GetSandboxId(), r.GetOutput())
	}
	// Its place is free: one more fits (position 1), the next does not.
	a, err := in.client.ExecuteAsync(ctx, shellReq("echo after", 0))
	if err != nil || a.GetQueuePosition() != 1 {
		t.Fatalf("submission after the deadline freed the place: %v %v, want accepted at position 1", a, err)
	}
	if _, err := in.client.ExecuteAsync(ctx, shellReq("echo refused", 0)); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second submission: %v, want RESOURCE_EXHAUSTED", err)
	}
	if _, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: blocker.GetExecutionId()}); err != nil {
		t.Fatalf("cancel blocker: %v", err)
	}
	after, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: true})
	if err != nil || after.GetState() != stateCompleted || after.GetOutput() != "after\n" {
		t.Fatalf("the execution queued behind the blocker: %v %v, want COMPLETED with \"after\\n\"", after, err)
	}
}
