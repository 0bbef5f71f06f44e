//go:build linux

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/test/testbin"
)

func TestGojaTypeScript(t *testing.T) {
	in := requireSandbox(t)
	resp := execute(t, in.client, gojaReq(`const n: number = 6 * 7; console.log("answer", n)`, 0))
	if resp.GetOutput() != "answer 42\n" || !resp.GetSuccess() ||
		resp.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED ||
		resp.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_EXITED {
		t.Fatalf("want output \"answer 42\\n\", success, COMPLETED, EXITED; got %s", describe(resp))
	}
}

// TestWhitespaceCodeRuns: code of only whitespace is a program that does
// nothing (as in ProDisco), not empty code: it runs and succeeds in every
// runtime, synchronously and asynchronously.
func TestWhitespaceCodeRuns(t *testing.T) {
	in := requireSandbox(t)
	for _, req := range []*sandboxv1.ExecuteRequest{gojaReq(" \n\t", 0), shellReq(" \n\t", 0)} {
		if resp := execute(t, in.client, req); !resp.GetSuccess() {
			t.Errorf("%s: %s", req.GetRuntime(), describe(resp))
		}
	}
	ctx := callCtx(t)
	a, err := in.client.ExecuteAsync(ctx, shellReq("  ", 0))
	if err != nil {
		t.Fatalf("ExecuteAsync(blank): %v", err)
	}
	st, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: true})
	if err != nil || !st.GetResult().GetSuccess() {
		t.Fatalf("GetExecution(blank) = %v, %v", st, err)
	}
}

func TestRequestErrors(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	finished := execute(t, in.client, shellReq("true", 0))
	if !finished.GetSuccess() {
		t.Fatalf("setup execution: %s", describe(finished))
	}
	tests := []struct {
		name     string
		call     func() error
		code     codes.Code
		contains string
	}{
		{
			name: "syntax error names line and column",
			call: func() error {
				_, err := in.client.Execute(ctx, gojaReq("let a = 1;\nlet b = (;\n", 0))
				return err
			},
			code: codes.InvalidArgument, contains: "2:10",
		},
		{
			name: "empty code",
			call: func() error {
				_, err := in.client.Execute(ctx, gojaReq("", 0))
				return err
			},
			code: codes.InvalidArgument, contains: "empty",
		},
		{
			name: "negative memory limit",
			call: func() error {
				req := shellReq("true", 0)
				req.Limits = &sandboxv1.ResourceLimits{MaxMemoryBytes: -1}
				_, err := in.client.Execute(ctx, req)
				return err
			},
			code: codes.InvalidArgument, contains: "max_memory_bytes",
		},
		{
			name: "zero top-level timeout",
			call: func() error {
				req := shellReq("true", 0)
				zero := int32(0)
				req.TimeoutMs = &zero
				_, err := in.client.Execute(ctx, req)
				return err
			},
			code: codes.InvalidArgument, contains: "timeout_ms",
		},
		{
			name: "unknown execution",
			call: func() error {
				_, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "no-such-execution"})
				return err
			},
			code: codes.NotFound, contains: "no-such-execution",
		},
		{
			name: "cancel a finished execution",
			call: func() error {
				_, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: finished.GetOutcome().GetExecutionId()})
				return err
			},
			code: codes.FailedPrecondition, contains: finished.GetOutcome().GetExecutionId(),
		},
		{
			name: "negative list limit",
			call: func() error {
				_, err := in.client.ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{Limit: -1})
				return err
			},
			code: codes.InvalidArgument, contains: "limit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st, _ := status.FromError(err)
			if st.Code() != tt.code || !strings.Contains(st.Message(), tt.contains) {
				t.Fatalf("got %v; want %s with a message containing %q", err, tt.code, tt.contains)
			}
		})
	}
}

func TestListExecutionsNewestFirstThenLimit(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	var ids []string
	for i := range 3 {
		resp := execute(t, in.client, gojaReq(fmt.Sprintf("console.log(%d) // list-%d", i, i), 0))
		if !resp.GetSuccess() {
			t.Fatalf("execution %d: %s", i, describe(resp))
		}
		ids = append(ids, resp.GetOutcome().GetExecutionId())
	}
	list, err := in.client.ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{Limit: 2})
	if err != nil {
		t.Fatalf("ListExecutions: %v", err)
	}
	var got []string
	for _, e := range list.GetExecutions() {
		got = append(got, e.GetExecutionId())
	}
	if want := []string{ids[2], ids[1]}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ListExecutions(limit 2) = %v; want the two newest, newest first: %v", got, want)
	}

	all, err := in.client.ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{
		States: []sandboxv1.ExecutionState{sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED},
	})
	if err != nil {
		t.Fatalf("ListExecutions(COMPLETED): %v", err)
	}
	execs := all.GetExecutions()
	if len(execs) < 3 || execs[0].GetExecutionId() != ids[2] {
		t.Fatalf("ListExecutions(COMPLETED) starts with %v; want %s first of at least 3", execs, ids[2])
	}
	for i := 1; i < len(execs); i++ {
		if execs[i].GetStartedAtMs() > execs[i-1].GetStartedAtMs() {
			t.Fatalf("not newest first at %d: %d after %d", i, execs[i].GetStartedAtMs(), execs[i-1].GetStartedAtMs())
		}
		if execs[i].GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
			t.Fatalf("state filter let %s through", execs[i].GetState())
		}
	}
}

func TestExecuteAsyncAnswersAtOnce(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	const calls = 7
	var took []time.Duration
	var ids []string
	for range calls {
		start := time.Now()
		resp, err := in.client.ExecuteAsync(ctx, shellReq("sleep 0.2", 0))
		took = append(took, time.Since(start))
		if err != nil {
			t.Fatalf("ExecuteAsync: %v", err)
		}
		ids = append(ids, resp.GetExecutionId())
	}
	for _, id := range ids {
		resp, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
		if err != nil || resp.GetResult() == nil || !resp.GetResult().GetSuccess() {
			t.Fatalf("GetExecution(%s, wait): %v %v", id, resp, err)
		}
	}
	m := median(took)
	t.Logf("ExecuteAsync latency: median %v of %v", m, took)
	if m >= testbin.Scaled(50*time.Millisecond) {
		t.Fatalf("ExecuteAsync median latency %v; want under %v", m, testbin.Scaled(50*time.Millisecond))
	}
}

func TestGetExecutionOffsetsPerStream(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	stdout := strings.Repeat("0123456789", 300) // 3000 bytes
	stderr := strings.Repeat("abcdefghij", 50)  // 500 bytes
	// printf repeats its format for each argument: 300 and 50 times.
	code := "printf '0123456789%.0s' $(seq 300); printf 'abcdefghij%.0s' $(seq 50) >&2"
	async, err := in.client.ExecuteAsync(ctx, shellReq(code, 0))
	if err != nil {
		t.Fatalf("ExecuteAsync: %v", err)
	}
	tests := []struct {
		name           string
		outOff, errOff int64
	}{
		{"both from zero", 0, 0},
		{"independent offsets", 1234, 321},
		{"stdout done, stderr from start", 3000, 0},
		{"past the end", 5000, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{
				ExecutionId: async.GetExecutionId(), Wait: true,
				OutputOffset: tt.outOff, ErrorOutputOffset: tt.errOff,
			})
			if err != nil {
				t.Fatalf("GetExecution: %v", err)
			}
			if resp.GetResult() == nil || !resp.GetResult().GetSuccess() {
				t.Fatalf("execution did not succeed: %v", resp)
			}
			wantOut := stdout[min(tt.outOff, int64(len(stdout))):]
			wantErr := stderr[min(tt.errOff, int64(len(stderr))):]
			if resp.GetOutput() != wantOut || resp.GetErrorOutput() != wantErr {
				t.Fatalf("output %q (%d bytes), error output %q (%d bytes); want %d and %d bytes",
					resp.GetOutput(), len(resp.GetOutput()), resp.GetErrorOutput(), len(resp.GetErrorOutput()), len(wantOut), len(wantErr))
			}
			if resp.GetOutputLength() != 3000 || resp.GetErrorOutputLength() != 500 {
				t.Fatalf("lengths %d and %d; want 3000 and 500", resp.GetOutputLength(), resp.GetErrorOutputLength())
			}
		})
	}
}

func TestGetExecutionWaitReturnsAtTheEnd(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	async, err := in.client.ExecuteAsync(ctx, shellReq("sleep 0.5; echo done", 0))
	if err != nil {
		t.Fatalf("ExecuteAsync: %v", err)
	}
	start := time.Now()
	resp, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: async.GetExecutionId(), Wait: true})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("GetExecution(wait): %v", err)
	}
	if resp.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || resp.GetOutput() != "done\n" || resp.GetResult() == nil {
		t.Fatalf("GetExecution(wait) = state %s output %q result %v; want COMPLETED, \"done\\n\", a result", resp.GetState(), resp.GetOutput(), resp.GetResult())
	}
	if took < 400*time.Millisecond || took > testbin.Scaled(10*time.Second) {
		t.Fatalf("GetExecution(wait) took %v; want it to wait for the 0.5 s program", took)
	}

	// A long poll is bounded by the call's deadline.
	long, err := in.client.ExecuteAsync(ctx, shellReq("sleep 30", 0))
	if err != nil {
		t.Fatalf("ExecuteAsync: %v", err)
	}
	defer in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: long.GetExecutionId()})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = in.client.GetExecution(short, &sandboxv1.GetExecutionRequest{ExecutionId: long.GetExecutionId(), Wait: true})
	if took := time.Since(start); took > testbin.Scaled(5*time.Second) {
		t.Fatalf("long poll with a 300 ms deadline took %v (err %v)", took, err)
	}
}

func TestExecuteLatency(t *testing.T) {
	in := requireSandbox(t)
	tests := []struct {
		name string
		req  *sandboxv1.ExecuteRequest
		want string
	}{
		{"goja console.log(1)", gojaReq("console.log(1)", 0), "1\n"},
		{"shell true", shellReq("true", 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var took []time.Duration
			for range 15 {
				start := time.Now()
				resp := execute(t, in.client, tt.req)
				took = append(took, time.Since(start))
				if !resp.GetSuccess() || resp.GetOutput() != tt.want {
					t.Fatalf("%s", describe(resp))
				}
			}
			m := median(took)
			t.Logf("Execute latency of %s: median %v (min %v, max %v)", tt.name, m, took[0], took[len(took)-1])
			// Generous: a sandbox start is tens of milliseconds; seconds
			// mean something is broken (a wait on a timeout, a retry).
			if m > testbin.Scaled(time.Second) {
				t.Fatalf("median Execute latency %v; want well under a second", m)
			}
		})
	}
}

// TestOutputOverFourMiBReachesTheClient: an execution allowed 6 MiB of
// output returns all 5 MiB, Execute its first page and GetExecution the
// rest page by page (responses stay under grpc-go's default 4 MiB).
func TestOutputOverFourMiBReachesTheClient(t *testing.T) {
	in := requireSandbox(t)
	const size = 5 << 20
	req := shellReq(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", size), 0)
	req.Limits = &sandboxv1.ResourceLimits{MaxOutputBytes: 6 << 20}
	resp := execute(t, in.client, req)
	// One response carries at most supervisor.MaxOutputBytesPerCall of a
	// stream; the rest comes by offset.
	if !resp.GetSuccess() || len(resp.GetOutput()) != supervisor.MaxOutputBytesPerCall || !resp.GetOutputPartial() {
		t.Fatalf("Execute: success %v, %d bytes of output, partial %v; want the first %d", resp.GetSuccess(), len(resp.GetOutput()), resp.GetOutputPartial(), supervisor.MaxOutputBytesPerCall)
	}
	var got int
	var off int64
	for range 10 {
		g, err := in.client.GetExecution(callCtx(t), &sandboxv1.GetExecutionRequest{ExecutionId: resp.GetOutcome().GetExecutionId(), OutputOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		got += len(g.GetOutput())
		off = g.GetOutputLength()
		if g.GetResult() != nil {
			break
		}
	}
	if got != size {
		t.Fatalf("GetExecution pages: %d bytes; want %d", got, size)
	}
}

// TestGetExecutionMarksDroppedOutput: past max_output_bytes the middle of
// a stream is dropped; a GetExecution page that crosses it says where in
// output and how many bytes (execfarm's extension fields), so a client
// need not print the head and the tail as one text.
func TestGetExecutionMarksDroppedOutput(t *testing.T) {
	in := requireSandbox(t)
	const run = 100_000
	req := shellReq(fmt.Sprintf("for c in a b c; do head -c %d /dev/zero | tr '\\0' $c; done; head -c %d /dev/zero | tr '\\0' e >&2", run, run), 0)
	req.Limits = &sandboxv1.ResourceLimits{MaxOutputBytes: 64 << 10}
	resp := execute(t, in.client, req)
	g, err := in.client.GetExecution(callCtx(t), &sandboxv1.GetExecutionRequest{ExecutionId: resp.GetOutcome().GetExecutionId()})
	if err != nil {
		t.Fatal(err)
	}
	out, i := g.GetOutput(), g.GetOutputGapIndex()
	if g.GetOutputDroppedBytes() == 0 || i <= 0 || i >= int64(len(out)) {
		t.Fatalf("dropped %d bytes at index %d of %d bytes of output; want a gap inside it", g.GetOutputDroppedBytes(), i, len(out))
	}
	if strings.Trim(out[:i], "a") != "" || strings.Trim(out[i:], "c") != "" || int64(len(out))+g.GetOutputDroppedBytes() != 3*run {
		t.Errorf("head %q... (%d bytes), %d dropped, tail ...%q (%d bytes); want a's, then c's, %d in all",
			out[:8], i, g.GetOutputDroppedBytes(), out[len(out)-8:], int64(len(out))-i, 3*run)
	}
	errOut := g.GetErrorOutput()
	if g.GetErrorOutputDroppedBytes() != run-int64(len(errOut)) || strings.Trim(errOut, "e") != "" {
		t.Errorf("stderr: %d bytes kept, %d dropped at index %d; want %d in all", len(errOut), g.GetErrorOutputDroppedBytes(), g.GetErrorOutputGapIndex(), run)
	}
}
