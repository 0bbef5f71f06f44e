package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// fakeClient records the last request of each method and answers what the
// test set; methods a test does not expect answer UNIMPLEMENTED through the
// embedded nil interface (a panic, which fails the test).
type fakeClient struct {
	sandboxv1.SandboxServiceClient
	mu   sync.Mutex
	reqs []proto.Message

	execute *sandboxv1.ExecuteResponse
	chunks  []*sandboxv1.ExecuteChunk
	async   *sandboxv1.ExecuteAsyncResponse
	get     *sandboxv1.GetExecutionResponse
	cancel  *sandboxv1.CancelExecutionResponse
	list    *sandboxv1.ListExecutionsResponse
	test    *sandboxv1.ExecuteTestResponse
	err     error
}

func (f *fakeClient) record(m proto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, m)
}

// answer records request r and returns resp with the error the test set.
func answer[T any](f *fakeClient, r proto.Message, resp T) (T, error) {
	f.record(r)
	return resp, f.err
}

func (f *fakeClient) last() proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return nil
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeClient) Execute(_ context.Context, r *sandboxv1.ExecuteRequest, _ ...grpc.CallOption) (*sandboxv1.ExecuteResponse, error) {
	return answer(f, r, f.execute)
}

func (f *fakeClient) ExecuteStream(_ context.Context, r *sandboxv1.ExecuteRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[sandboxv1.ExecuteChunk], error) {
	f.record(r)
	if f.err != nil {
		return nil, f.err
	}
	return &fakeStream{chunks: f.chunks}, nil
}

func (f *fakeClient) ExecuteAsync(_ context.Context, r *sandboxv1.ExecuteRequest, _ ...grpc.CallOption) (*sandboxv1.ExecuteAsyncResponse, error) {
	return answer(f, r, f.async)
}

func (f *fakeClient) GetExecution(_ context.Context, r *sandboxv1.GetExecutionRequest, _ ...grpc.CallOption) (*sandboxv1.GetExecutionResponse, error) {
	return answer(f, r, f.get)
}

func (f *fakeClient) CancelExecution(_ context.Context, r *sandboxv1.CancelExecutionRequest, _ ...grpc.CallOption) (*sandboxv1.CancelExecutionResponse, error) {
	return answer(f, r, f.cancel)
}

func (f *fakeClient) ListExecutions(_ context.Context, r *sandboxv1.ListExecutionsRequest, _ ...grpc.CallOption) (*sandboxv1.ListExecutionsResponse, error) {
	return answer(f, r, f.list)
}

func (f *fakeClient) ExecuteTest(_ context.Context, r *sandboxv1.ExecuteTestRequest, _ ...grpc.CallOption) (*sandboxv1.ExecuteTestResponse, error) {
	return answer(f, r, f.test)
}

type fakeStream struct {
	grpc.ClientStream
	chunks []*sandboxv1.ExecuteChunk
}

func (s *fakeStream) Recv() (*sandboxv1.ExecuteChunk, error) {
	if len(s.chunks) == 0 {
		return nil, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *fakeStream) Header() (metadata.MD, error) { return nil, nil }

// session connects an MCP client to a bridge over f, in memory; progress
// notifications' messages go to progress (buffered), if not nil.
func session(t *testing.T, f *fakeClient, progress chan<- string) *mcp.ClientSession {
	t.Helper()
	srv, err := NewServer(f, "test")
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				progress <- r.Params.Message
			}
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// receive takes n messages from ch; notifications are handled apart from
// the call's response, so they may still be coming after it.
func receive(t *testing.T, ch <-chan string, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case m := <-ch:
			got = append(got, m)
		case <-timeout:
			t.Fatalf("got %d of %d progress notifications", len(got), n)
		}
	}
	return got
}

// call calls runSandbox and returns its structured output, or the text of
// its tool error.
func call(t *testing.T, cs *mcp.ClientSession, args map[string]any, meta mcp.Meta) (Output, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolName, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool(%v): %v", args, err)
	}
	if res.IsError {
		return Output{}, res.Content[0].(*mcp.TextContent).Text
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out, ""
}

func TestToolIsListedWithProDiscoSchema(t *testing.T) {
	cs := session(t, &fakeClient{}, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != ToolName {
		t.Fatalf("tools = %v, want runSandbox alone", res.Tools)
	}
	b, _ := json.Marshal(res.Tools[0].InputSchema)
	for _, want := range []string{`"enum":["execute","stream","async","status","cancel","list","test"]`, `"maximum":120000`, `"maximum":100`, `"enum":["goja","node","shell","python"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("input schema lacks %s: %s", want, b)
		}
	}
	if res.Tools[0].OutputSchema == nil {
		t.Error("no output schema: results would not be structured")
	}
	// Every property has one plain type: MCP Inspector (0.15) cannot send
	// a value for a union such as ["null","array"].
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for name, p := range schema.Properties {
		if _, ok := p["type"].(string); !ok {
			t.Errorf("property %s: type %v, want one type name", name, p["type"])
		}
	}
	if typ := schema.Properties["states"]["type"]; typ != "array" {
		t.Errorf("states: type %v, want \"array\"", typ)
	}
}

func TestExecuteMapsRequestAndResult(t *testing.T) {
	f := &fakeClient{execute: &sandboxv1.ExecuteResponse{
		Success: false, Output: "partial\n", ErrorOutput: "boom\n", Error: proto.String("exit code 3"), ExecutionTimeMs: 12,
		State:   sandboxv1.ExecutionState_EXECUTION_STATE_FAILED,
		Outcome: &sandboxv1.ExecutionOutcome{ExecutionId: "e1", TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, ExitCode: 3},
	}}
	cs := session(t, f, nil)
	out, errText := call(t, cs, map[string]any{"code": "echo partial; exit 3", "runtime": "shell", "timeout": 5000}, nil)
	if errText != "" {
		t.Fatalf("tool error: %s", errText)
	}
	req := f.last().(*sandboxv1.ExecuteRequest)
	if req.GetCode() != "echo partial; exit 3" || req.GetRuntime() != sandboxv1.Runtime_RUNTIME_SHELL || req.GetTimeoutMs() != 5000 {
		t.Errorf("request = %v", req)
	}
	if out.Mode != "execute" || out.ExecutionID != "e1" || out.State != "failed" || out.Success == nil || *out.Success ||
		out.Output != "partial\n" || out.ErrorOutput != "boom\n" || out.Error != "exit code 3" ||
		out.TerminationReason != "exited" || out.ExitCode == nil || *out.ExitCode != 3 || out.ExecutionTimeMs != 12 {
		t.Errorf("output = %+v", out)
	}
	// The default timeout is ProDisco's, 30 s.
	call(t, cs, map[string]any{"code": "1"}, nil)
	if got := f.last().(*sandboxv1.ExecuteRequest).GetTimeoutMs(); got != DefaultTimeoutMs {
		t.Errorf("default timeout = %d, want %d", got, DefaultTimeoutMs)
	}
}

func TestRefusals(t *testing.T) {
	f := &fakeClient{}
	cs := session(t, f, nil)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "INVALID_ARGUMENT: code (or cached) is required"},
		{map[string]any{"code": "1", "cached": "x"}, "INVALID_ARGUMENT: give code or cached, not both"},
		{map[string]any{"mode": "status"}, "INVALID_ARGUMENT: executionId is required"},
		{map[string]any{"mode": "cancel"}, "INVALID_ARGUMENT: executionId is required"},
		{map[string]any{"mode": "test"}, "INVALID_ARGUMENT: tests is required"},
		{map[string]any{"mode": "run"}, "enum"},
		{map[string]any{"code": "1", "timeout": 120001}, "INVALID_ARGUMENT: timeout: 120001 is out of range: want an integer from 0 to 120000"},
		{map[string]any{"code": "1", "runtime": "ruby"}, "enum"},
		{map[string]any{"mode": "list", "limit": 101}, "INVALID_ARGUMENT: limit: 101 is out of range: want an integer from 0 to 100"},
		{map[string]any{"mode": "list", "states": []string{"done"}}, "enum"},
		{map[string]any{"code": 5}, "code"},
		{map[string]any{"code": "1", "maxOutputChars": 127}, "INVALID_ARGUMENT: maxOutputChars: 127 is out of range: want an integer from 128 to 300000"},
		{map[string]any{"code": strings.Repeat("x", MaxCodeBytes+1)}, "INVALID_ARGUMENT: code and tests are"},
		{map[string]any{"mode": "test", "code": strings.Repeat("x", MaxCodeBytes), "tests": "test('a', () => {})"}, "INVALID_ARGUMENT: code and tests are"},
		{map[string]any{"code": "1", "maxOutputChars": 300001}, "INVALID_ARGUMENT: maxOutputChars: 300001 is out of range: want an integer from 128 to 300000"},
	} {
		if _, errText := call(t, cs, c.args, nil); !strings.Contains(errText, c.want) {
			t.Errorf("%v: tool error %q, want it to contain %q", c.args, errText, c.want)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("refused calls reached the supervisor: %v", f.reqs)
	}
	// The supervisor's refusals keep their code.
	f.err = status.Error(codes.ResourceExhausted, "execution queue full (50 waiting)")
	if _, errText := call(t, cs, map[string]any{"code": "1", "mode": "async"}, nil); errText != "RESOURCE_EXHAUSTED: execution queue full (50 waiting)" {
		t.Errorf("queue full: tool error %q", errText)
	}
}

// TestStreamSendsOutputAsProgress: every output chunk is a progress
// notification, in order (stderr marked, long chunks split on rune
// boundaries), and the result has the whole output.
func TestStreamSendsOutputAsProgress(t *testing.T) {
	long := strings.Repeat("é", progressChunk) // 2 bytes each: split in two
	f := &fakeClient{chunks: []*sandboxv1.ExecuteChunk{
		{ExecutionId: "s1", Chunk: &sandboxv1.ExecuteChunk_Output{Output: "one\n"}},
		{ExecutionId: "s1", Chunk: &sandboxv1.ExecuteChunk_ErrorOutput{ErrorOutput: "warn\n"}},
		{ExecutionId: "s1", Chunk: &sandboxv1.ExecuteChunk_Output{Output: long}},
		{ExecutionId: "s1", Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{
			Success: true, State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED, ExecutionTimeMs: 7,
			Outcome: &sandboxv1.ExecutionOutcome{TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED},
		}}},
	}}
	progress := make(chan string, 16)
	cs := session(t, f, progress)
	out, errText := call(t, cs, map[string]any{"mode": "stream", "code": "x"}, mcp.Meta{"progressToken": "p1"})
	if errText != "" {
		t.Fatalf("tool error: %s", errText)
	}
	if out.ExecutionID != "s1" || out.State != "completed" || *out.Success != true || out.Output != "one\n"+long || out.ErrorOutput != "warn\n" {
		t.Errorf("output = %+v", out)
	}
	want := []string{"one\n", "stderr: warn\n", long[:progressChunk], long[progressChunk:]}
	if got := receive(t, progress, len(want)); !slices.Equal(got, want) {
		t.Errorf("progress messages = %q..., want %d in order", got[:2], len(want))
	}
	// Without a progress token there are no notifications, and the same
	// kind of result. (A notification sent anyway would arrive before the
	// next call's, which sends some: checked there.)
	f.chunks = []*sandboxv1.ExecuteChunk{{ExecutionId: "s2", Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{State: sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT}}}}
	out, _ = call(t, cs, map[string]any{"mode": "stream", "code": "x"}, nil)
	if out.State != "timeout" {
		t.Errorf("no token: state %q", out.State)
	}
	f.chunks = []*sandboxv1.ExecuteChunk{
		{ExecutionId: "s4", Chunk: &sandboxv1.ExecuteChunk_Output{Output: "after\n"}},
		{ExecutionId: "s4", Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED}}},
	}
	call(t, cs, map[string]any{"mode": "stream", "code": "x"}, mcp.Meta{"progressToken": "p2"})
	if got := receive(t, progress, 1); got[0] != "after\n" {
		t.Errorf("first notification after a call without a token: %q, want the next call's", got[0])
	}
	// A stream that ends without a result is an error, not a success.
	f.chunks = []*sandboxv1.ExecuteChunk{{ExecutionId: "s3", Chunk: &sandboxv1.ExecuteChunk_Output{Output: "x"}}}
	if _, errText := call(t, cs, map[string]any{"mode": "stream", "code": "x"}, nil); !strings.HasPrefix(errText, "UNAVAILABLE:") {
		t.Errorf("stream without a result: %q", errText)
	}
}

func TestAsyncStatusCancelListTest(t *testing.T) {
	f := &fakeClient{
		async: &sandboxv1.ExecuteAsyncResponse{ExecutionId: "a1", State: sandboxv1.ExecutionState_EXECUTION_STATE_PENDING, QueuePosition: 3},
		get: &sandboxv1.GetExecutionResponse{ExecutionId: "a1", State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED,
			Output: "tail", OutputLength: 10, ErrorOutputLength: 0,
			Result: &sandboxv1.ExecuteResult{Success: true, State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED}},
		cancel: &sandboxv1.CancelExecutionResponse{Success: true, State: sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED},
		list: &sandboxv1.ListExecutionsResponse{Executions: []*sandboxv1.ExecutionInfo{{
			ExecutionId: "a1", State: sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT, Runtime: sandboxv1.Runtime_RUNTIME_PYTHON,
			TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT, CodePreview: "while True: pass",
		}}},
		test: &sandboxv1.ExecuteTestResponse{Success: false, Summary: &sandboxv1.TestSummary{Total: 2, Passed: 1, Failed: 1},
			Tests: []*sandboxv1.TestResult{{Name: "adds", Passed: true, DurationMs: 1}, {Name: "subtracts", Error: proto.String("Expected 1 to equal 2")}}},
	}
	cs := session(t, f, nil)

	out, _ := call(t, cs, map[string]any{"mode": "async", "cached": "script-1.ts"}, nil)
	if req := f.last().(*sandboxv1.ExecuteRequest); req.GetCached() != "script-1.ts" {
		t.Errorf("async request = %v, want the cached script", req)
	}
	if out.ExecutionID != "a1" || out.State != "pending" || out.QueuePosition != 3 {
		t.Errorf("async = %+v", out)
	}

	out, _ = call(t, cs, map[string]any{"mode": "status", "executionId": "a1", "wait": true, "outputOffset": 6}, nil)
	if req := f.last().(*sandboxv1.GetExecutionRequest); !req.GetWait() || req.GetOutputOffset() != 6 || req.GetExecutionId() != "a1" {
		t.Errorf("status request = %v", req)
	}
	if out.State != "completed" || out.Output != "tail" || out.OutputLength == nil || *out.OutputLength != 10 ||
		out.ErrorOutputLength == nil || *out.ErrorOutputLength != 0 || out.Success == nil || !*out.Success {
		t.Errorf("status = %+v", out)
	}

	out, _ = call(t, cs, map[string]any{"mode": "cancel", "executionId": "a1"}, nil)
	if out.State != "cancelled" || !*out.Success {
		t.Errorf("cancel = %+v", out)
	}

	out, _ = call(t, cs, map[string]any{"mode": "list", "states": []string{"timeout", "failed"}}, nil)
	req := f.last().(*sandboxv1.ListExecutionsRequest)
	if req.GetLimit() != DefaultListLimit || !slices.Equal(req.GetStates(), []sandboxv1.ExecutionState{sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT, sandboxv1.ExecutionState_EXECUTION_STATE_FAILED}) {
		t.Errorf("list request = %v", req)
	}
	if out.Executions == nil || len(*out.Executions) != 1 || (*out.Executions)[0].Runtime != "python" || (*out.Executions)[0].TerminationReason != "timeout" || (*out.Executions)[0].State != "timeout" {
		t.Errorf("list = %+v", out.Executions)
	}

	out, _ = call(t, cs, map[string]any{"mode": "test", "code": "const add=(a,b)=>a+b", "tests": "test('adds', () => {})"}, nil)
	if req := f.last().(*sandboxv1.ExecuteTestRequest); req.GetCode() != "const add=(a,b)=>a+b" || req.GetTimeoutMs() != DefaultTimeoutMs {
		t.Errorf("test request = %v", req)
	}
	if out.Summary == nil || out.Summary.Failed != 1 || len(out.Tests) != 2 || out.Tests[0].Error != "Expected 1 to equal 2" || out.Tests[1].Name != "adds" || *out.Success {
		t.Errorf("test = %+v", out)
	}
}

// TestOutputBudget: results keep at most maxOutputChars characters of
// output (30000 by default) and say what they omitted.
func TestOutputBudget(t *testing.T) {
	big := strings.Repeat("x", 40_000)
	f := &fakeClient{execute: &sandboxv1.ExecuteResponse{Success: true, Output: big, ErrorOutput: "e\n", State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED}}
	cs := session(t, f, nil)
	out, _ := call(t, cs, map[string]any{"code": "x"}, nil)
	if !out.OutputTruncated || out.ErrorOutputTruncated || *out.OutputTotalChars != 40_000 || *out.ErrorOutputTotalChars != 2 ||
		len(out.Output)+len(out.ErrorOutput) != DefaultOutputChars || !strings.Contains(out.Output, "characters omitted") {
		t.Errorf("default budget: %d+%d characters, truncated %v/%v, totals %v/%v", len(out.Output), len(out.ErrorOutput),
			out.OutputTruncated, out.ErrorOutputTruncated, *out.OutputTotalChars, *out.ErrorOutputTotalChars)
	}
	out, _ = call(t, cs, map[string]any{"code": "x", "maxOutputChars": 200}, nil)
	if len(out.Output)+len(out.ErrorOutput) != 200 || out.ErrorOutput != "e\n" {
		t.Errorf("budget 200: %d+%d characters", len(out.Output), len(out.ErrorOutput))
	}
	f.execute.Output = "short\n"
	out, _ = call(t, cs, map[string]any{"code": "x"}, nil)
	if out.Output != "short\n" || out.OutputTruncated || *out.OutputTotalChars != 6 {
		t.Errorf("short output: %+v", out)
	}
}

// TestOutputPastTheOutputLimit: when the sandbox's output limit dropped
// the middle of a stream, the result counts the stream's real size (its
// bytes written, from the outcome, not the bytes kept), says it was
// truncated, and its error says so too, after the run's own error.
func TestOutputPastTheOutputLimit(t *testing.T) {
	kept := strings.Repeat("x", 1000)
	cut := &sandboxv1.ExecutionOutcome{StdoutTruncated: true, StdoutBytes: 3_000_000, StderrBytes: 2,
		TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, ExitCode: 3,
		EffectiveLimits: &sandboxv1.ResourceLimits{MaxOutputBytes: 1000}}
	f := &fakeClient{execute: &sandboxv1.ExecuteResponse{Output: kept, ErrorOutput: "e\n", Error: proto.String("exited with code 3"),
		State: sandboxv1.ExecutionState_EXECUTION_STATE_FAILED, Outcome: cut}}
	cs := session(t, f, nil)
	check := func(name string, out Output, wantErr string) {
		t.Helper()
		if *out.OutputTotalChars != 3_000_000 || !out.OutputTruncated || *out.ErrorOutputTotalChars != 2 || out.ErrorOutputTruncated {
			t.Errorf("%s: totals %d/%d, truncated %v/%v; want 3000000/2, true/false", name,
				*out.OutputTotalChars, *out.ErrorOutputTotalChars, out.OutputTruncated, out.ErrorOutputTruncated)
		}
		if !strings.HasPrefix(out.Error, wantErr) || !strings.Contains(out.Error, "output truncated: output (stdout) was 3000000 bytes, over the sandbox's output limit of 1000 bytes") {
			t.Errorf("%s: error = %q, want %q and the truncation", name, out.Error, wantErr)
		}
	}
	out, _ := call(t, cs, map[string]any{"code": "x", "runtime": "shell"}, nil)
	check("execute, exit 3", out, "exited with code 3; output truncated")
	// Within the budget, the kept bytes are all shown, and the marker
	// counts the rest (execute's reply does not say where they were
	// dropped: after the kept bytes).
	out, _ = call(t, cs, map[string]any{"code": "x", "runtime": "shell", "maxOutputChars": 5000}, nil)
	if want := kept + "\n[... 2999000 characters omitted ...]\n"; out.Output != want {
		t.Errorf("output %q, want the 1000 kept and the marker", out.Output)
	}
	// Past the budget, the omission marker counts what was dropped too.
	out, _ = call(t, cs, map[string]any{"code": "x", "runtime": "shell", "maxOutputChars": 500}, nil)
	if n := utf8.RuneCountInString(out.Output); n+utf8.RuneCountInString(out.ErrorOutput) != 500 ||
		!strings.Contains(out.Output, fmt.Sprintf("[... %d characters omitted ...]", 3_000_000-strings.Count(out.Output, "x"))) {
		t.Errorf("budget 500: output %q", out.Output)
	}

	// A run that ended well: the error is the truncation alone, in the
	// tool's own terms (the supervisor's names its proto fields).
	f.execute.State, f.execute.Error = sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED,
		proto.String("output truncated: a stream exceeded max_output_bytes (head and tail kept; see stdout_truncated, stderr_truncated)")
	out, _ = call(t, cs, map[string]any{"code": "x", "runtime": "shell"}, nil)
	check("execute, exit 0", out, "output truncated: output (stdout)")

	// stream: the bytes the stream did not carry count too.
	f.chunks = []*sandboxv1.ExecuteChunk{
		{Chunk: &sandboxv1.ExecuteChunk_Output{Output: kept[:500]}},
		{Chunk: &sandboxv1.ExecuteChunk_ErrorOutput{ErrorOutput: "e\n"}},
		{Chunk: &sandboxv1.ExecuteChunk_Output{Output: kept[500:]}, StreamOffset: 2_999_500},
		{Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{Error: proto.String("exited with code 3"),
			State: sandboxv1.ExecutionState_EXECUTION_STATE_FAILED, Outcome: cut}}},
	}
	out, _ = call(t, cs, map[string]any{"code": "x", "runtime": "shell", "mode": "stream"}, nil)
	check("stream", out, "exited with code 3; output truncated")

	// test: as execute.
	f.test = &sandboxv1.ExecuteTestResponse{Output: kept, ErrorOutput: "e\n", Outcome: cut, Summary: &sandboxv1.TestSummary{}}
	out, _ = call(t, cs, map[string]any{"mode": "test", "tests": "test('a', () => {})"}, nil)
	check("test", out, "output truncated")
}

// jsonLines connects srv to raw JSON-RPC lines, initialized: send
// writes one line and, for a request (it has an "id"), returns the
// answer decoded.
func jsonLines(t *testing.T, srv *mcp.Server) (send func(line string) map[string]any) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); ss.Wait() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send = func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) {
			return nil
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", line, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send
}

// TestNullArgumentsAreAToolError: "arguments": null (or absent) is
// refused like any incomplete call, and the session goes on. (With a
// schema default the SDK once panicked on it and took the bridge down.)
func TestNullArgumentsAreAToolError(t *testing.T) {
	srv, err := NewServer(&fakeClient{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, srv)
	for i, args := range []string{`"arguments":null`, `"arguments":{}`, ``} {
		params := `{"name":"runSandbox"` + map[bool]string{true: ",", false: ""}[args != ""] + args + `}`
		m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 10+i, params))
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "INVALID_ARGUMENT: code (or cached) is required") {
			t.Errorf("params %s: answer %v, want an INVALID_ARGUMENT tool error", params, m)
		}
	}
	if m := send(`{"jsonrpc":"2.0","id":20,"method":"tools/list"}`); m["result"] == nil {
		t.Errorf("tools/list after the refusals: %v", m)
	}
}

// TestTestResultsKeepToTheBudget: a thousand long failing tests fit the
// budget with the output; the summary still counts them all.
func TestTestResultsKeepToTheBudget(t *testing.T) {
	resp := &sandboxv1.ExecuteTestResponse{Summary: &sandboxv1.TestSummary{Total: 1001, Passed: 1, Failed: 1000}, Output: strings.Repeat("o", 5000)}
	resp.Tests = append(resp.Tests, &sandboxv1.TestResult{Name: "passes", Passed: true})
	for i := range 1000 {
		resp.Tests = append(resp.Tests, &sandboxv1.TestResult{Name: fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 500)), Error: proto.String(strings.Repeat("é", 5000))})
	}
	cs := session(t, &fakeClient{test: resp}, nil)
	for _, budget := range []int{MinOutputChars, 5000, DefaultOutputChars} {
		out, errText := call(t, cs, map[string]any{"mode": "test", "tests": "x", "maxOutputChars": budget}, nil)
		if errText != "" {
			t.Fatal(errText)
		}
		n := utf8.RuneCountInString(out.Output) + utf8.RuneCountInString(out.ErrorOutput)
		for _, r := range out.Tests {
			n += testCost + utf8.RuneCountInString(r.Name) + utf8.RuneCountInString(r.Error)
			if utf8.RuneCountInString(r.Error) > maxTestError {
				t.Errorf("budget %d: a test error of %d characters", budget, utf8.RuneCountInString(r.Error))
			}
		}
		if n > budget || out.TestsOmitted+len(out.Tests) != 1001 || out.Summary.Failed != 1000 || *out.OutputTotalChars != 5000 {
			t.Errorf("budget %d: %d characters, %d tests kept, %d omitted, summary %+v", budget, n, len(out.Tests), out.TestsOmitted, out.Summary)
		}
		if len(out.Tests) > 0 && out.Tests[0].Passed {
			t.Errorf("budget %d: a passed test first; failed ones go first", budget)
		}
	}
}

// TestNamelessTestsAreNotFree: ten thousand passing tests without names
// still fit the budget: each costs testCost.
func TestNamelessTestsAreNotFree(t *testing.T) {
	resp := &sandboxv1.ExecuteTestResponse{Success: true, Summary: &sandboxv1.TestSummary{Total: 10000, Passed: 10000}}
	for range 10000 {
		resp.Tests = append(resp.Tests, &sandboxv1.TestResult{Passed: true})
	}
	cs := session(t, &fakeClient{test: resp}, nil)
	out, _ := call(t, cs, map[string]any{"mode": "test", "tests": "x", "maxOutputChars": MinOutputChars}, nil)
	if len(out.Tests)*testCost > MinOutputChars/2 || out.TestsOmitted != 10000-len(out.Tests) {
		t.Errorf("%d nameless tests kept, %d omitted, at budget %d", len(out.Tests), out.TestsOmitted, MinOutputChars)
	}
}

// TestListWithNoMatchIsEmpty: list mode with no execution to show
// returns "executions": [] (it once left the field out); other modes
// leave it out.
func TestListWithNoMatchIsEmpty(t *testing.T) {
	f := &fakeClient{list: &sandboxv1.ListExecutionsResponse{}, execute: &sandboxv1.ExecuteResponse{Success: true, State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED}}
	cs := session(t, f, nil)
	for _, c := range []struct {
		args map[string]any
		want string // the executions field's JSON, "" = absent
	}{
		{map[string]any{"mode": "list"}, "[]"},
		{map[string]any{"code": "x"}, ""},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolName, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("%v: %v %v", c.args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		if got := string(m["executions"]); got != c.want {
			t.Errorf("%v: executions %q, want %q (%s)", c.args, got, c.want, b)
		}
	}
}
