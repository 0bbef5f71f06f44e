//go:build linux

package integration

import (
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestOneExecutionsOutputEvictsNoOtherResult: an execution that prints
// 34 MB on each stream (within the 64 MiB per-stream ceiling, beyond the
// 64 MiB retention budget) ends after another client's execution; the
// other result and its output stay readable, and the large one keeps its
// result, its lengths and its share of the budget (head and tail), marked
// truncated.
func TestOneExecutionsOutputEvictsNoOtherResult(t *testing.T) {
	requireSandbox(t)
	// Its own supervisor: the shared one's retention budget is the other
	// tests' too.
	in, err := startInstance("retention", queueSlot, 4, 2, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := callCtx(t)
	small := execute(t, in.client, shellReq("echo keep-me; echo and-me >&2", 0))
	if !small.GetSuccess() {
		t.Fatalf("small: %s", describe(small))
	}
	const perStream = 34_000_000
	big := shellReq("head -c 34000000 /dev/zero | tr '\\0' a; head -c 34000000 /dev/zero | tr '\\0' b >&2", 60_000)
	big.Limits.MaxOutputBytes = 40 << 20
	started, err := in.dial(t).ExecuteAsync(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	// Offsets past the end: only the state and the result.
	got, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: started.GetExecutionId(), Wait: true,
		OutputOffset: 1 << 40, ErrorOutputOffset: 1 << 40})
	if err != nil || got.GetResult() == nil {
		t.Fatalf("big: %v %v", err, got)
	}
	o := got.GetResult().GetOutcome()
	if got.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || o.GetStdoutBytes() != perStream || o.GetStderrBytes() != perStream {
		t.Fatalf("big ended %s with %d/%d bytes", got.GetState(), o.GetStdoutBytes(), o.GetStderrBytes())
	}
	if !o.GetStdoutTruncated() || !o.GetStderrTruncated() {
		t.Errorf("big's output was cut to its share of the retention budget, but the outcome does not say so: %v", o)
	}
	again, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: small.GetOutcome().GetExecutionId()})
	if err != nil {
		t.Fatalf("the earlier execution's result is gone after a large one ended: %v", err)
	}
	if again.GetOutput() != "keep-me\n" || again.GetErrorOutput() != "and-me\n" || !again.GetResult().GetSuccess() {
		t.Fatalf("the earlier execution changed: output %q error output %q result %v", again.GetOutput(), again.GetErrorOutput(), again.GetResult())
	}
}
