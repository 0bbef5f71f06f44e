// Package mcpbridge serves execfarm to AI agents over the Model Context
// Protocol (Bridge; over stdio, or Streamable HTTP with HTTPHandler).
//
// runSandbox has the seven modes of ProDisco's tool of that name
// (execute, stream, async, status, cancel, list, test), each a call of
// prodisco.sandbox.v1.SandboxService on a supervisor. execfarm's
// extension, runtime, picks goja (default), node, shell or python. The
// MCP side is the official Go SDK (github.com/modelcontextprotocol/go-sdk);
// `execfarm mcp` runs it on stdio or, with --http, over HTTP or HTTPS
// (ListenHTTP refuses a non-loopback address without bearer tokens and
// TLS).
//
// Results are structured (the tool declares its output schema) and also
// sent as JSON text. A failed execution is a normal result (success
// false, with its state and termination reason); a request the supervisor
// refuses (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, NOT_FOUND...) is a tool
// error whose text starts with the gRPC code, so the agent can correct
// itself; input outside the schema is refused by the SDK before a call.
// An argument whose value is JSON null is taken as absent, for every tool
// (nullIsAbsent): an optional one gets its default, a required one is
// missing.
//
// Next to it, with a SessionService client, the tools of the Kubernetes
// agent-sandbox MCP server over session sandboxes (sessiontools.go:
// create_sandbox, delete_sandbox, execute_command, upload_file,
// download_file, list_files, file_exists, get_sandbox_status, and the
// get_sandboxes resource). execute_command and runSandbox's stream mode
// read each stream into a Capture (its memory bounded by the budget) and
// cut it by the same rule as runSandbox's other output (Budget,
// budget.go). Every mode reads a stream into a Capture: bytes the bridge
// never received (the sandbox's output limit dropped them, or they lie
// past a reply's first page) are a gap in it (Capture.Skip), counted in
// the total and the omission marker, from the chunks' offsets and the
// outcome's byte counts; a result's error says when the output limit cut
// a stream.
//
// Every request acts for its MCP client (Config.Scope): its gRPC calls
// carry the client's key (package principal), so the supervisor shows a
// client its own executions and sandboxes only. An ephemeral client (a
// stdio process; an HTTP session without a bearer token) has its
// sandboxes deleted when its session ends; a bearer token's client
// outlives its sessions.
package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// ToolName is the tool's name, as in ProDisco.
const ToolName = "runSandbox"

// Limits of the tool's input, from ProDisco's schema: timeout at most
// 120000 ms (default 30000), list limit at most 100 (default 10).
const (
	MaxTimeoutMs     = 120_000
	DefaultTimeoutMs = 30_000
	MaxListLimit     = 100
	DefaultListLimit = 10
)

// progressChunk bounds the text of one progress notification in stream
// mode, bytes; longer output chunks are split.
const progressChunk = 4096

// Input is the tool's input. Which fields a mode reads is in each field's
// description.
type Input struct {
	Mode        string `json:"mode,omitempty" jsonschema:"execute (default: run and wait), stream (run, sending output as progress notifications), async (start, return the execution id), status (read an execution, optionally waiting), cancel, list, or test (run uvu tests)"`
	Code        string `json:"code,omitempty" jsonschema:"execute/stream/async/test: the program (TypeScript/JavaScript for goja and node, a command for shell, a script for python); in test mode the code under test"`
	Cached      string `json:"cached,omitempty" jsonschema:"execute/stream/async: name of a cached script to run instead of code"`
	Timeout     int64  `json:"timeout,omitempty" jsonschema:"execute/stream/async/test: wall-clock timeout in milliseconds (default 30000, at most 120000)"`
	Runtime     string `json:"runtime,omitempty" jsonschema:"execute/stream/async/test: goja (default), node, shell or python"`
	ExecutionID string `json:"executionId,omitempty" jsonschema:"status/cancel: the execution's id, from async mode or list"`
	Wait        bool   `json:"wait,omitempty" jsonschema:"status: wait until the execution has ended (bounded by the supervisor)"`
	// OutputOffset is a byte offset into stdout.
	OutputOffset             int64    `json:"outputOffset,omitempty" jsonschema:"status: return stdout from this byte offset (the previous call's outputLength)"`
	ErrorOutputOffset        int64    `json:"errorOutputOffset,omitempty" jsonschema:"status: return stderr from this byte offset (the previous call's errorOutputLength)"`
	States                   []string `json:"states,omitempty" jsonschema:"list: only executions in these states (pending, running, completed, failed, cancelled, timeout)"`
	Limit                    int32    `json:"limit,omitempty" jsonschema:"list: at most this many, newest first (default 10, at most 100)"`
	IncludeCompletedWithinMs int64    `json:"includeCompletedWithinMs,omitempty" jsonschema:"list: only finished executions that ended within this many milliseconds"`
	Tests                    string   `json:"tests,omitempty" jsonschema:"test: test code using uvu's test and assert"`
	MaxOutputChars           int      `json:"maxOutputChars,omitempty" jsonschema:"execute/stream/status/test: characters of output, errorOutput and test results together in the result (default 30000, 128 to 300000); past it each stream keeps its beginning and end around an omission marker, and test results (failed first) are left out"`
}

// Output is the tool's structured result; fields a mode does not set are
// left out.
type Output struct {
	Mode        string `json:"mode"`
	ExecutionID string `json:"executionId,omitempty"`
	// State is pending, running, completed, failed, cancelled or timeout.
	State   string `json:"state,omitempty"`
	Success *bool  `json:"success,omitempty"`
	// Output and ErrorOutput are the program's stdout and stderr (in
	// status mode, from the offsets asked for).
	Output      string `json:"output,omitempty"`
	ErrorOutput string `json:"errorOutput,omitempty"`
	Error       string `json:"error,omitempty"`
	// ExecutionTimeMs is the run's wall time, milliseconds.
	ExecutionTimeMs int64 `json:"executionTimeMs,omitempty"`
	// TerminationReason is why the execution ended: exited, timeout,
	// cpu_time, memory, pids, output_limit, cancelled, signal, internal.
	TerminationReason string `json:"terminationReason,omitempty"`
	ExitCode          *int32 `json:"exitCode,omitempty"`
	QueuePosition     int32  `json:"queuePosition,omitempty"`
	// OutputLength and ErrorOutputLength are the streams' total lengths in
	// bytes: the offsets to pass to the next status call.
	OutputLength      *int64 `json:"outputLength,omitempty"`
	ErrorOutputLength *int64 `json:"errorOutputLength,omitempty"`
	// Cached names the cache entry a successful new script was saved as.
	// OutputTotalChars and ErrorOutputTotalChars are the streams' lengths
	// in characters before the output budget (maxOutputChars): in execute,
	// stream and test modes the whole stream's, bytes the bridge never
	// received (dropped by the sandbox's output limit, or past the
	// supervisor's 1 MiB reply page) counting one character each; in
	// status mode the part read from the offsets. OutputTruncated and
	// ErrorOutputTruncated say whether the result omits any of it; Error
	// then also says when the output limit dropped some ("output
	// truncated: ...").
	OutputTotalChars      *int   `json:"outputTotalChars,omitempty"`
	ErrorOutputTotalChars *int   `json:"errorOutputTotalChars,omitempty"`
	OutputTruncated       bool   `json:"outputTruncated,omitempty"`
	ErrorOutputTruncated  bool   `json:"errorOutputTruncated,omitempty"`
	Cached                string `json:"cached,omitempty"`
	Message               string `json:"message,omitempty"`
	// Executions is list mode's (an empty list when none match: a
	// pointer, so that other modes leave it out).
	Executions *[]ExecutionInfo `json:"executions,omitempty"`
	Summary    *TestSummary     `json:"summary,omitempty"`
	// Tests are the test results, failed ones first, within the output
	// budget; TestsOmitted counts those left out (Summary counts all).
	Tests        []TestResult `json:"tests,omitempty"`
	TestsOmitted int          `json:"testsOmitted,omitempty"`
}

// ExecutionInfo is one execution in list mode.
type ExecutionInfo struct {
	ExecutionID       string `json:"executionId"`
	State             string `json:"state"`
	Runtime           string `json:"runtime,omitempty"`
	StartedAtMs       int64  `json:"startedAtMs,omitempty"`
	FinishedAtMs      int64  `json:"finishedAtMs,omitempty"`
	CodePreview       string `json:"codePreview,omitempty"`
	TerminationReason string `json:"terminationReason,omitempty"`
	QueuePosition     int32  `json:"queuePosition,omitempty"`
	CachedName        string `json:"cachedName,omitempty"`
}

// TestSummary counts a test run's tests.
type TestSummary struct {
	Total   int32 `json:"total"`
	Passed  int32 `json:"passed"`
	Failed  int32 `json:"failed"`
	Skipped int32 `json:"skipped"`
}

// TestResult is one test of a test run.
type TestResult struct {
	Name       string `json:"name"`
	Passed     bool   `json:"passed"`
	Skipped    bool   `json:"skipped,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

var (
	modes = []string{"execute", "stream", "async", "status", "cancel", "list", "test"}
)

// inputSchema is Input's inferred schema with ProDisco's enums, bounds and
// defaults added, so that the SDK refuses what they exclude.
func inputSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[Input](nil)
	if err != nil {
		return nil, err
	}
	p := s.Properties
	p["mode"].Enum = anys(modes)
	// The defaults the handler applies, declared (ProDisco's schema's).
	p["mode"].Default = defaultOf("execute")
	p["timeout"].Default = defaultOf(DefaultTimeoutMs)
	p["limit"].Default = defaultOf(DefaultListLimit)
	p["runtime"].Enum = anys([]string{"goja", "node", "shell", "python"})
	p["timeout"].Minimum, p["timeout"].Maximum = ptr(0.0), ptr(float64(MaxTimeoutMs))
	p["limit"].Minimum, p["limit"].Maximum = ptr(0.0), ptr(float64(MaxListLimit))
	p["states"].Items.Enum = anys([]string{"pending", "running", "completed", "failed", "cancelled", "timeout"})
	// A slice is inferred as ["null","array"], which MCP Inspector cannot
	// send; absent is how a caller says "no filter".
	for _, prop := range p {
		for _, t := range prop.Types {
			if t != "null" {
				prop.Type = t
			}
		}
		prop.Types = nil
	}
	p["maxOutputChars"].Minimum, p["maxOutputChars"].Maximum = ptr(float64(MinOutputChars)), ptr(float64(MaxOutputChars))
	for _, f := range []string{"outputOffset", "errorOutputOffset", "includeCompletedWithinMs"} {
		p[f].Minimum = ptr(0.0)
	}
	return s, nil
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// NewServer returns an MCP server with the runSandbox tool alone, which
// calls client as the bridge's own principal. version is reported to MCP
// clients.
func NewServer(client sandboxv1.SandboxServiceClient, version string) (*mcp.Server, error) {
	b, err := New(Config{Executions: client, Version: version})
	if err != nil {
		return nil, err
	}
	return b.Server, nil
}

// instructions tell an agent what the server offers.
const instructions = "runSandbox runs code in a fresh isolated sandbox (own namespaces, cgroup, seccomp filter, read-only root) and reports how it ended. Runtimes: goja (TypeScript/JavaScript, default), node, shell, python."

const sessionInstructions = " create_sandbox makes a sandbox that persists across calls (files in /workspace, a lifetime of 300 s by default): run shell commands in it with execute_command, move files with upload_file and download_file (1 MiB at most each), look with list_files, file_exists and get_sandbox_status, and delete it with delete_sandbox. Your sandboxes are yours alone; the get_sandboxes resource lists them."

func (b *Bridge) register() error {
	schema, err := inputSchema()
	if err != nil {
		return fmt.Errorf("mcpbridge: input schema: %w", err)
	}
	text := instructions
	if b.cfg.Sessions != nil {
		text += sessionInstructions
	}
	b.Server = mcp.NewServer(&mcp.Implementation{Name: "execfarm", Version: b.cfg.Version}, &mcp.ServerOptions{Instructions: text})
	rs := &bridge{client: b.cfg.Executions}
	tool := &mcp.Tool{
		Name:        ToolName,
		Description: "Run TypeScript/JavaScript, a shell command or Python in an isolated sandbox. Modes: execute (default) runs and returns the output; stream sends output as progress notifications; async returns an executionId for status (with wait) and cancel; list shows recent executions; test runs uvu tests (test/assert) and returns per-test results.",
		InputSchema: schema,
	}
	mcp.AddTool(b.Server, tool, rs.call)
	ints := toolInts{}
	ints.add(tool)
	if b.cfg.Sessions != nil {
		addSessionTools(b.Server, b.cfg.Sessions, ints)
	}
	b.Server.AddReceivingMiddleware(b.scope, lifetimeArg, nullIsAbsent, ints.middleware)
	return nil
}

// bridge serves runSandbox.
type bridge struct {
	client sandboxv1.SandboxServiceClient
}

func (b *bridge) call(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, Output, error) {
	mode := in.Mode
	if mode == "" {
		mode = "execute"
	}
	budget := in.MaxOutputChars
	if budget == 0 {
		budget = DefaultOutputChars
	}
	budget = min(max(budget, MinOutputChars), MaxOutputChars)
	var out Output
	// stdout and stderr are the streams as received, when a mode reads
	// them otherwise than into out.Output and out.ErrorOutput.
	var stdout, stderr text
	var err error
	switch mode {
	case "execute":
		out, stdout, stderr, err = b.execute(ctx, in, budget)
	case "stream":
		out, stdout, stderr, err = b.stream(ctx, req, in, budget)
	case "async":
		out, err = b.async(ctx, in)
	case "status":
		out, stdout, stderr, err = b.status(ctx, in, budget)
	case "cancel":
		out, err = b.cancel(ctx, in)
	case "list":
		out, err = b.list(ctx, in)
	case "test":
		out, stdout, stderr, err = b.test(ctx, in, budget)
	default:
		err = invalid("unknown mode %q (want one of %s)", mode, strings.Join(modes, ", "))
	}
	if err != nil {
		return nil, Output{}, wireError(err)
	}
	out.Mode = mode
	switch mode {
	case "execute", "stream", "status", "test":
		if stdout == nil {
			stdout, stderr = newStringText(out.Output), newStringText(out.ErrorOutput)
		}
		// Test results take up to half, failed ones first; the output
		// gets the rest.
		var used int
		out.Tests, used, out.TestsOmitted = budgetTests(out.Tests, budget/2)
		if mode != "test" {
			out.Tests = nil
		}
		o, e := split(stdout, stderr, budget-used)
		out.Output, out.OutputTotalChars, out.OutputTruncated = o.Text, &o.TotalChars, o.Truncated
		out.ErrorOutput, out.ErrorOutputTotalChars, out.ErrorOutputTruncated = e.Text, &e.TotalChars, e.Truncated
	}
	return nil, out, nil
}

// noteTruncation says in out.Error that the sandbox's output limit cut a
// stream of o, as execute_command's markers do: alone when the run
// otherwise ended well (the supervisor's error then says only that, in
// terms of its own fields), else after the run's error.
func noteTruncation(out *Output, o *sandboxv1.ExecutionOutcome) {
	if !o.GetStdoutTruncated() && !o.GetStderrTruncated() {
		return
	}
	var cut []string
	if o.GetStdoutTruncated() {
		cut = append(cut, fmt.Sprintf("output (stdout) was %d bytes", o.GetStdoutBytes()))
	}
	if o.GetStderrTruncated() {
		cut = append(cut, fmt.Sprintf("errorOutput (stderr) was %d bytes", o.GetStderrBytes()))
	}
	limit := "the sandbox's output limit"
	if n := o.GetEffectiveLimits().GetMaxOutputBytes(); n > 0 {
		limit = fmt.Sprintf("the sandbox's output limit of %d bytes per stream", n)
	}
	note := fmt.Sprintf("output truncated: %s, over %s; its beginning and end were kept and the middle dropped",
		strings.Join(cut, ", "), limit)
	if out.Error == "" || out.State == "completed" {
		out.Error = note
		return
	}
	out.Error += "; " + note
}

// wireError turns a gRPC error into "CODE: message", the code by its wire
// name (google.rpc.Code), which tells an agent whether to fix its request
// (INVALID_ARGUMENT), retry later (RESOURCE_EXHAUSTED, UNAVAILABLE) or
// look elsewhere (NOT_FOUND).
func wireError(err error) error {
	if st, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", code.Code(st.Code()), st.Message())
	}
	return err
}

// MaxCodeBytes bounds code plus tests in a call, bytes: the request must
// fit the supervisor's 4 MiB message limit, which would otherwise refuse
// it as RESOURCE_EXHAUSTED, a code that tells an agent to retry.
const MaxCodeBytes = 3 << 20

func checkSize(in Input) error {
	if n := len(in.Code) + len(in.Tests); n > MaxCodeBytes {
		return invalid("code and tests are %d bytes; at most %d", n, MaxCodeBytes)
	}
	return nil
}

// executeRequest builds the request of the execute, stream and async
// modes: code or cached, not both.
func executeRequest(in Input) (*sandboxv1.ExecuteRequest, error) {
	if err := checkSize(in); err != nil {
		return nil, err
	}
	rt, err := runtimeOf(in.Runtime)
	if err != nil {
		return nil, err
	}
	// Raw output: output and errorOutput are the program's two streams,
	// which the output budget splits.
	req := &sandboxv1.ExecuteRequest{Runtime: rt, TimeoutMs: ptr(int32(timeoutOf(in))), RawOutput: true}
	switch {
	case in.Code != "" && in.Cached != "":
		return nil, invalid("give code or cached, not both")
	case in.Cached != "":
		req.Source = &sandboxv1.ExecuteRequest_Cached{Cached: in.Cached}
	case in.Code != "":
		req.Source = &sandboxv1.ExecuteRequest_Code{Code: in.Code}
	default:
		return nil, invalid("code (or cached) is required")
	}
	return req, nil
}

// invalid is the error of a request the bridge refuses itself, worded as
// the supervisor's own refusals are.
func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func runtimeOf(name string) (sandboxv1.Runtime, error) {
	rt, ok := sandboxv1.ParseRuntime(name)
	if !ok {
		return 0, invalid("unknown runtime %q (want goja, node, shell or python)", name)
	}
	return rt, nil
}

func timeoutOf(in Input) int64 {
	if in.Timeout <= 0 {
		return DefaultTimeoutMs
	}
	return min(in.Timeout, MaxTimeoutMs)
}

// execute runs the code with Execute. The reply carries the first page
// of each stream's kept bytes; stdout and stderr count the rest, and what
// the output limit dropped, from the outcome's byte totals.
func (b *bridge) execute(ctx context.Context, in Input, budget int) (out Output, stdout, stderr text, err error) {
	req, err := executeRequest(in)
	if err != nil {
		return Output{}, nil, nil, err
	}
	resp, err := b.client.Execute(ctx, req)
	if err != nil {
		return Output{}, nil, nil, err
	}
	out = Output{
		Success: ptr(resp.GetSuccess()), Error: resp.GetError(), ExecutionTimeMs: resp.GetExecutionTimeMs(),
		State: resp.GetState().Name(), Cached: resp.GetCached().GetName(),
	}
	o := resp.GetOutcome()
	outcome(&out, o)
	noteTruncation(&out, o)
	return out, receivedText(resp.GetOutput(), 0, 0, o.GetStdoutBytes(), budget),
		receivedText(resp.GetErrorOutput(), 0, 0, o.GetStderrBytes(), budget), nil
}

// stream runs the code with ExecuteStream. When the caller asked for
// progress (a progress token), every output chunk is sent as a progress
// notification, in order, prefixed "stderr: " for stderr; the result
// carries the output within budget characters either way (a Capture per
// stream: the bridge holds at most that much of any output).
func (b *bridge) stream(ctx context.Context, req *mcp.CallToolRequest, in Input, budget int) (out Output, stdout, stderr text, err error) {
	r, err := executeRequest(in)
	if err != nil {
		return Output{}, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the supervisor cancels the execution if we stop reading
	st, err := b.client.ExecuteStream(ctx, r)
	if err != nil {
		return Output{}, nil, nil, err
	}
	token := req.Params.GetProgressToken()
	capOut, capErr := NewCapture(budget), NewCapture(budget)
	var readOut, readErr int64
	n := 0
	notify := func(prefix, text string) {
		if token == nil {
			return
		}
		for len(text) > 0 {
			part := text[:cut(text, progressChunk)]
			text = text[len(part):]
			n++
			// A notification that cannot be sent does not stop the run.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: prefix + part})
		}
	}
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return Output{}, nil, nil, status.Error(codes.Unavailable, "the execution stream ended without a result")
		}
		if err != nil {
			return Output{}, nil, nil, err
		}
		out.ExecutionID = c.GetExecutionId()
		switch x := c.GetChunk().(type) {
		case *sandboxv1.ExecuteChunk_Output:
			capOut.SkipTo(&readOut, c.GetStreamOffset())
			capOut.WriteString(x.Output)
			readOut += int64(len(x.Output))
			notify("", x.Output)
		case *sandboxv1.ExecuteChunk_ErrorOutput:
			capErr.SkipTo(&readErr, c.GetStreamOffset())
			capErr.WriteString(x.ErrorOutput)
			readErr += int64(len(x.ErrorOutput))
			notify("stderr: ", x.ErrorOutput)
		case *sandboxv1.ExecuteChunk_Result:
			res := x.Result
			o := res.GetOutcome()
			// Bytes the stream skipped (dropped before this client read
			// them) are gaps.
			capOut.SkipTo(&readOut, o.GetStdoutBytes())
			capErr.SkipTo(&readErr, o.GetStderrBytes())
			capOut.Close()
			capErr.Close()
			out.Success, out.Error, out.ExecutionTimeMs = ptr(res.GetSuccess()), res.GetError(), res.GetExecutionTimeMs()
			out.State, out.Cached = res.GetState().Name(), res.GetCached().GetName()
			outcome(&out, o)
			noteTruncation(&out, o)
			return out, capOut, capErr, nil
		}
	}
}

// cut returns where to cut s to at most n bytes without splitting a UTF-8
// sequence.
func cut(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		return n
	}
	return i
}

func (b *bridge) async(ctx context.Context, in Input) (Output, error) {
	req, err := executeRequest(in)
	if err != nil {
		return Output{}, err
	}
	resp, err := b.client.ExecuteAsync(ctx, req)
	if err != nil {
		return Output{}, err
	}
	return Output{ExecutionID: resp.GetExecutionId(), State: resp.GetState().Name(), QueuePosition: resp.GetQueuePosition()}, nil
}

// status reads an execution with GetExecution: a page of each stream
// from the offsets asked for, whose bytes dropped by the output limit
// (the page's gap) count in the totals and the marker.
func (b *bridge) status(ctx context.Context, in Input, budget int) (out Output, stdout, stderr text, err error) {
	if in.ExecutionID == "" {
		return Output{}, nil, nil, invalid("executionId is required")
	}
	resp, err := b.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{
		ExecutionId: in.ExecutionID, Wait: in.Wait, OutputOffset: in.OutputOffset, ErrorOutputOffset: in.ErrorOutputOffset,
	})
	if err != nil {
		return Output{}, nil, nil, err
	}
	out = Output{
		ExecutionID: resp.GetExecutionId(), State: resp.GetState().Name(),
		OutputLength: ptr(resp.GetOutputLength()), ErrorOutputLength: ptr(resp.GetErrorOutputLength()), QueuePosition: resp.GetQueuePosition(),
	}
	if res := resp.GetResult(); res != nil {
		out.Success, out.Error, out.ExecutionTimeMs = ptr(res.GetSuccess()), res.GetError(), res.GetExecutionTimeMs()
		out.Cached = res.GetCached().GetName()
		outcome(&out, res.GetOutcome())
		noteTruncation(&out, res.GetOutcome())
	}
	// A page covers [offset, length) of its stream, raw bytes.
	page := func(s string, gap, dropped, offset, length int64) text {
		return receivedText(s, gap, dropped, max(length-offset, int64(len(s))+max(dropped, 0)), budget)
	}
	return out, page(resp.GetOutput(), resp.GetOutputGapIndex(), resp.GetOutputDroppedBytes(), in.OutputOffset, resp.GetOutputLength()),
		page(resp.GetErrorOutput(), resp.GetErrorOutputGapIndex(), resp.GetErrorOutputDroppedBytes(), in.ErrorOutputOffset, resp.GetErrorOutputLength()), nil
}

func (b *bridge) cancel(ctx context.Context, in Input) (Output, error) {
	if in.ExecutionID == "" {
		return Output{}, invalid("executionId is required")
	}
	resp, err := b.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: in.ExecutionID})
	if err != nil {
		return Output{}, err
	}
	return Output{ExecutionID: in.ExecutionID, Success: ptr(resp.GetSuccess()), State: resp.GetState().Name(), Message: resp.GetMessage()}, nil
}

func (b *bridge) list(ctx context.Context, in Input) (Output, error) {
	req := &sandboxv1.ListExecutionsRequest{Limit: in.Limit, IncludeCompletedWithinMs: in.IncludeCompletedWithinMs}
	if req.Limit <= 0 {
		req.Limit = DefaultListLimit
	}
	req.Limit = min(req.Limit, MaxListLimit)
	for _, s := range in.States {
		st, ok := sandboxv1.ParseExecutionState(s)
		if !ok {
			return Output{}, invalid("unknown state %q", s)
		}
		req.States = append(req.States, st)
	}
	resp, err := b.client.ListExecutions(ctx, req)
	if err != nil {
		return Output{}, err
	}
	list := make([]ExecutionInfo, 0, len(resp.GetExecutions()))
	out := Output{Executions: &list}
	for _, e := range resp.GetExecutions() {
		info := ExecutionInfo{
			ExecutionID: e.GetExecutionId(), State: e.GetState().Name(), Runtime: e.GetRuntime().Name(),
			StartedAtMs: e.GetStartedAtMs(), FinishedAtMs: e.GetFinishedAtMs(), CodePreview: e.GetCodePreview(),
			QueuePosition: e.GetQueuePosition(), CachedName: e.GetCachedName(),
		}
		if r := e.GetTerminationReason(); r != sandboxv1.TerminationReason_TERMINATION_REASON_UNSPECIFIED {
			info.TerminationReason = r.Name()
		}
		list = append(list, info)
	}
	return out, nil
}

func (b *bridge) test(ctx context.Context, in Input, budget int) (out Output, stdout, stderr text, err error) {
	if strings.TrimSpace(in.Tests) == "" {
		return Output{}, nil, nil, invalid("tests is required")
	}
	if err := checkSize(in); err != nil {
		return Output{}, nil, nil, err
	}
	rt, err := runtimeOf(in.Runtime)
	if err != nil {
		return Output{}, nil, nil, err
	}
	req := &sandboxv1.ExecuteTestRequest{Tests: in.Tests, TimeoutMs: ptr(int32(timeoutOf(in))), Runtime: rt, RawOutput: true}
	if in.Code != "" {
		req.Code = &in.Code
	}
	resp, err := b.client.ExecuteTest(ctx, req)
	if err != nil {
		return Output{}, nil, nil, err
	}
	out = Output{
		Success: ptr(resp.GetSuccess()), Error: resp.GetError(), ExecutionTimeMs: resp.GetExecutionTimeMs(), Tests: []TestResult{},
	}
	if s := resp.GetSummary(); s != nil {
		out.Summary = &TestSummary{Total: s.GetTotal(), Passed: s.GetPassed(), Failed: s.GetFailed(), Skipped: s.GetSkipped()}
	}
	for _, t := range resp.GetTests() {
		out.Tests = append(out.Tests, TestResult{Name: t.GetName(), Passed: t.GetPassed(), Skipped: t.GetSkipped(), Error: t.GetError(), DurationMs: t.GetDurationMs()})
	}
	o := resp.GetOutcome()
	outcome(&out, o)
	noteTruncation(&out, o)
	return out, receivedText(resp.GetOutput(), 0, 0, o.GetStdoutBytes(), budget),
		receivedText(resp.GetErrorOutput(), 0, 0, o.GetStderrBytes(), budget), nil
}

// outcome copies what an ExecutionOutcome adds: the id, why it ended and
// the exit code.
func outcome(out *Output, o *sandboxv1.ExecutionOutcome) {
	if o == nil {
		return
	}
	if out.ExecutionID == "" {
		out.ExecutionID = o.GetExecutionId()
	}
	if r := o.GetTerminationReason(); r != sandboxv1.TerminationReason_TERMINATION_REASON_UNSPECIFIED {
		out.TerminationReason = r.Name()
		if r == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED {
			out.ExitCode = ptr(o.GetExitCode())
		}
	}
}
