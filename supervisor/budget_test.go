package supervisor

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// reasonOf returns the ErrorInfo reason of a status error, "" without one.
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// TestNoQueueRefusalNamesItsCause: with none allowed to wait (NoQueue,
// `serve --queue-size 0`), an execution that finds a slot free but its
// memory limit over what the budget has free is refused MEMORY_BUDGET,
// naming the budget and what is held, not QUEUE_FULL; one that finds
// every slot busy is QUEUE_FULL naming the slots and the queue size.
func TestNoQueueRefusalNamesItsCause(t *testing.T) {
	s, err := New(Config{Sandbox: validSandboxConfig(t), MaxConcurrent: 1, QueueSize: NoQueue, MemoryBudgetBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(0) }()
	if s.cfg.QueueSize != 0 {
		t.Fatalf("QueueSize %d after New, want 0 (none may wait)", s.cfg.QueueSize)
	}
	req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}}
	ctx := context.Background()

	// A session sandbox holds 768Mi: the default 512Mi does not fit.
	if err := s.budget.TryAcquire(768 << 20); err != nil {
		t.Fatal(err)
	}
	_, err = s.ExecuteAsync(ctx, req)
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || reasonOf(err) != "MEMORY_BUDGET" ||
		st.Message() != "execution: budget: a memory limit of 512Mi does not fit the node's memory budget of 1Gi (--memory-budget): live sandboxes hold 768Mi, 256Mi is free" {
		t.Errorf("slot free, memory short: %v (reason %q); want RESOURCE_EXHAUSTED MEMORY_BUDGET naming the budget and what is held", err, reasonOf(err))
	}
	s.budget.Release(768 << 20)

	// The one slot is held.
	tk, err := s.sched.Enqueue(0)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release()
	_, err = s.ExecuteAsync(ctx, req)
	st = status.Convert(err)
	if st.Code() != codes.ResourceExhausted || reasonOf(err) != "QUEUE_FULL" ||
		st.Message() != "all 1 execution slots are busy (--max-concurrent) and none may wait (--queue-size 0)" {
		t.Errorf("slots busy: %v (reason %q); want RESOURCE_EXHAUSTED QUEUE_FULL naming the slots", err, reasonOf(err))
	}
	if running, queued := s.sched.Counts(); running != 1 || queued != 0 {
		t.Errorf("counts %d,%d want 1,0: a refused execution took a place", running, queued)
	}
}

// TestHealthCheckReportsTheMemoryBudget: HealthCheck carries the node's
// memory budget and what its holders hold now, bytes: a session
// sandbox's limit and a running execution's.
func TestHealthCheckReportsTheMemoryBudget(t *testing.T) {
	s, err := New(Config{Sandbox: validSandboxConfig(t), MaxConcurrent: 1, MemoryBudgetBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(0) }()
	if err := s.budget.TryAcquire(256 << 20); err != nil { // a session sandbox
		t.Fatal(err)
	}
	defer s.budget.Release(256 << 20)
	tk, err := s.sched.Enqueue(128 << 20) // a running execution
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release()
	h, err := s.HealthCheck(context.Background(), &sandboxv1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if h.GetMemoryBudgetBytes() != 1<<30 || h.GetMemoryHeldBytes() != 384<<20 || h.GetRunning() != 1 {
		t.Errorf("HealthCheck: budget %d, held %d, running %d; want %d, %d, 1", h.GetMemoryBudgetBytes(), h.GetMemoryHeldBytes(), h.GetRunning(), 1<<30, 384<<20)
	}
}
