//go:build linux

package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// TestResponsesArePaged: an execution keeping 3 MB on each stream is
// answered by Execute with the first MaxOutputBytesPerCall of each and
// output_partial set, and a ProDisco-style client that reads
// GetExecution by offsets until a terminal state gets every byte, in
// responses of at most MaxOutputBytesPerCall per stream.
func TestResponsesArePaged(t *testing.T) {
	in := requireSandbox(t)
	const n = 3_000_000
	req := shellReq("yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c 3000000; yes err | head -c 3000000 >&2", 60_000)
	req.Limits.MaxOutputBytes = 8 << 20
	resp := execute(t, in.client, req)
	o := resp.GetOutcome()
	if !resp.GetSuccess() || o.GetStdoutBytes() != n || o.GetStderrBytes() != n {
		t.Fatalf("%s", describe(resp))
	}
	if len(resp.GetOutput()) > supervisor.MaxOutputBytesPerCall || len(resp.GetErrorOutput()) > supervisor.MaxOutputBytesPerCall ||
		!resp.GetOutputPartial() || !resp.GetErrorOutputPartial() {
		t.Fatalf("Execute carried %d and %d bytes, partial %v %v; want at most %d each, partial", len(resp.GetOutput()), len(resp.GetErrorOutput()),
			resp.GetOutputPartial(), resp.GetErrorOutputPartial(), supervisor.MaxOutputBytesPerCall)
	}
	want := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n", n/63+1)[:n]
	if !strings.HasPrefix(want, resp.GetOutput()) {
		t.Fatal("Execute's output is not the head of the stream")
	}
	// ProDisco's polling loop (seeds: offset = outputLength; stop at a
	// terminal state).
	ctx := callCtx(t)
	var got strings.Builder
	var off int64
	calls := 0
	for {
		g, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: o.GetExecutionId(), OutputOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if len(g.GetOutput()) > supervisor.MaxOutputBytesPerCall || len(g.GetErrorOutput()) > supervisor.MaxOutputBytesPerCall {
			t.Fatalf("GetExecution carried %d and %d bytes", len(g.GetOutput()), len(g.GetErrorOutput()))
		}
		if g.GetOutput() != "" {
			got.WriteString(g.GetOutput())
			off = g.GetOutputLength()
		}
		if g.GetErrorOutputLength() > supervisor.MaxOutputBytesPerCall {
			t.Fatalf("error_output_length %d from offset 0: a page longer than the maximum", g.GetErrorOutputLength())
		}
		if g.GetState() >= sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
			if g.GetResult() == nil {
				t.Fatal("a terminal state without the result")
			}
			break
		}
		if calls > 10 {
			t.Fatalf("still paging after %d calls", calls)
		}
	}
	if got.String() != want || calls < 3 {
		t.Fatalf("paged %d bytes in %d calls; want all %d, in at least 3", got.Len(), calls, n)
	}
}

// TestQueuedRequestsHaveAByteBudget: requests of a few MiB each queue up
// behind a running execution only until the bytes they hold reach the
// budget (execution.DefaultMaxJobBytes); the next is RESOURCE_EXHAUSTED,
// and once they are gone a request is admitted again.
func TestQueuedRequestsHaveAByteBudget(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("jobbytes", queueSlot, 4, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := callCtx(t)
	blocker, err := in.client.ExecuteAsync(ctx, shellReq("sleep 30", 60_000))
	if err != nil {
		t.Fatal(err)
	}
	big := gojaReq("// "+strings.Repeat("x", 3<<20)+"\nconsole.log(1)", 0)
	var ids []string
	var refused error
	for i := range 40 {
		r, err := in.client.ExecuteAsync(ctx, big)
		if err != nil {
			refused = err
			break
		}
		ids = append(ids, r.GetExecutionId())
		if i == 39 {
			t.Fatalf("40 requests of 3 MiB queued: no byte budget")
		}
	}
	// Each holds 3 MiB of code (the comment is no program): 64 MiB holds
	// about 20.
	if status.Code(refused) != codes.ResourceExhausted || len(ids) < 15 || len(ids) > 22 {
		t.Fatalf("after %d queued: %v; want RESOURCE_EXHAUSTED after about 20 (64 MiB)", len(ids), refused)
	}
	for _, id := range append(ids, blocker.GetExecutionId()) {
		if _, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if r := execute(t, in.client, big); !r.GetSuccess() {
		t.Fatalf("after the queue emptied: %s", describe(r))
	}
}
