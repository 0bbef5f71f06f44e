//go:build linux

package integration

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// TestMemoryBudget: with a node memory budget of 768 MiB, which holds one
// sandbox of the default 512 MiB and not two, a second session sandbox is
// refused RESOURCE_EXHAUSTED naming the budget; a single-use execution
// waits in the queue, with execution slots free, while a session sandbox
// holds the memory, and runs once it is deleted; a second single-use
// execution waits for the first to end; and a memory limit over the
// budget is INVALID_ARGUMENT (the memory ceiling defaults to the budget).
func TestMemoryBudget(t *testing.T) {
	const budget = 768 << 20
	si := startSessionInstance(t, "budget", 4, func(c *supervisor.Config) { c.MemoryBudgetBytes = budget })
	ctx := callCtx(t)
	alice, execs := si.sessions["alice"], si.execs["alice"]

	a := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	_, err := si.sessions["bob"].CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--memory-budget") || !strings.Contains(err.Error(), "hold 512Mi") {
		t.Fatalf("second sandbox over the budget: %v, want RESOURCE_EXHAUSTED naming --memory-budget and the 512Mi held", err)
	}

	pending := func(id string) {
		t.Helper()
		e, err := execs.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
		if err != nil || e.GetState() != statePending || e.GetQueuePosition() != 1 {
			t.Fatalf("execution %s: %v, %v; want PENDING at position 1", id, e, err)
		}
	}
	completes := func(id, want string) {
		t.Helper()
		e, err := execs.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
		if err != nil || e.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || e.GetOutput() != want {
			t.Fatalf("execution %s: %v, %v; want COMPLETED with %q", id, e, err, want)
		}
	}
	submit := func(code string) string {
		t.Helper()
		r, err := execs.ExecuteAsync(ctx, shellReq(code, 0))
		if err != nil {
			t.Fatalf("ExecuteAsync(%q): %v", code, err)
		}
		return r.GetExecutionId()
	}

	// The session sandbox holds the memory: the execution waits.
	x := submit("echo x")
	pending(x)
	if _, err := alice.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: a}); err != nil {
		t.Fatal(err)
	}
	completes(x, "x\n")

	// A running execution holds it: the next waits until it ends.
	y := submit("echo started; exec sleep 600")
	waitOutput(ctx, t, execs, y, "started")
	z := submit("echo z")
	pending(z)
	if _, err := execs.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: y}); err != nil {
		t.Fatal(err)
	}
	completes(z, "z\n")

	req := shellReq("echo big", 0)
	req.Limits = &sandboxv1.ResourceLimits{MaxMemoryBytes: budget + 1}
	if _, err := execs.ExecuteAsync(ctx, req); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "limits.max_memory_bytes") {
		t.Fatalf("memory limit over the budget: %v, want INVALID_ARGUMENT on limits.max_memory_bytes", err)
	}
}
