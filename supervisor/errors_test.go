package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
	"github.com/execfarm/execfarm/supervisor/session"
)

// TestRPCError is the map's table: each package's error, as the package
// returns it, gives its code, reason, field and message.
func TestRPCError(t *testing.T) {
	_, syntax := transform.TypeScript("const x = ;")
	var se *transform.SyntaxError
	if !errors.As(syntax, &se) {
		t.Fatalf("transform gave %v, want a *SyntaxError", syntax)
	}
	_, limit := limits.Resolve(&sandboxv1.ResourceLimits{MaxMemoryBytes: -1}, nil, limits.Default(), limits.DefaultCeilings())
	_, badEnv := program.Build(context.Background(), program.Input{Runtime: program.Shell, Code: "true", Env: map[string]string{"A=B": "x"}})
	_, noNode := program.Build(context.Background(), program.Input{Runtime: program.Node, Code: "1"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		field  string
		msg    string // "" = the error's text
		retry  bool
	}{
		{name: "request field", err: badRequest("execution_id", "execution_id is empty"), code: codes.InvalidArgument, reason: "INVALID_REQUEST", field: "execution_id"},
		{name: "limit", err: limit, code: codes.InvalidArgument, reason: "LIMIT_OUT_OF_RANGE", field: "limits.max_memory_bytes",
			msg: "invalid limits.max_memory_bytes -1: must not be negative"},
		{name: "syntax, wrapped", err: fmt.Errorf("build: %w", syntax), code: codes.InvalidArgument, reason: "SYNTAX_ERROR", field: "code", msg: se.Error()},
		{name: "transform limit", err: &transformer.LimitError{Bound: "stack", Limit: transformer.MaxStack}, code: codes.InvalidArgument, reason: "TRANSFORM_LIMIT", field: "code",
			msg: "code nests too deeply to transform: the parser passed its stack of 128 MiB"},
		{name: "program too large", err: &program.SizeError{Bytes: 5 << 20, Limit: program.MaxRequestBytes}, code: codes.InvalidArgument, reason: "PROGRAM_TOO_LARGE", field: "code",
			msg: "the program and its stdin are 5242880 bytes once transformed; at most 4128768"},
		{name: "transform busy", err: fmt.Errorf("%w: 40 MiB wait", transformer.ErrBusy), code: codes.ResourceExhausted, reason: "TRANSFORM_BUSY", retry: true},
		{name: "transform starved", err: fmt.Errorf("%w: no answer in 30s", transformer.ErrStarved), code: codes.ResourceExhausted, reason: "TRANSFORM_STARVED", retry: true},
		{name: "transform helper", err: fmt.Errorf("%w: start: no such file", transformer.ErrHelper), code: codes.Unavailable, reason: "TRANSFORM_HELPER_FAILED", retry: true},
		{name: "empty code", err: transform.ErrEmptyCode, code: codes.InvalidArgument, reason: "EMPTY_CODE", field: "code", msg: "code is empty"},
		{name: "unknown runtime", err: fmt.Errorf("%w: %q", program.ErrUnknownRuntime, "ruby"), code: codes.InvalidArgument, reason: "UNKNOWN_RUNTIME", field: "runtime"},
		{name: "no test mode", err: program.ErrNoTestMode, code: codes.InvalidArgument, reason: "NO_TEST_MODE", field: "runtime"},
		{name: "bad env", err: badEnv, code: codes.InvalidArgument, reason: "INVALID_ENV", field: "env"},
		{name: "runtime unavailable", err: noNode, code: codes.Unimplemented, reason: "RUNTIME_UNAVAILABLE"},
		{name: "cached not found", err: &execution.CachedError{Name: "x", Err: cache.ErrNotFound}, code: codes.NotFound, reason: "CACHED_SCRIPT_NOT_FOUND",
			msg: `cached script "x" not found`},
		{name: "cached ambiguous", err: &execution.CachedError{Name: "x", Err: &cache.AmbiguousError{Name: "x", Matches: []string{"x1", "x2"}}},
			code: codes.InvalidArgument, reason: "CACHED_SCRIPT_AMBIGUOUS", field: "cached"},
		{name: "cache broken", err: &execution.CachedError{Name: "x", Err: errors.New("disk on fire")}, code: codes.Internal, reason: "INTERNAL", msg: "disk on fire"},
		{name: "invalid filter", err: fmt.Errorf("list: %w", cache.ErrInvalidFilter), code: codes.InvalidArgument, reason: "INVALID_FILTER", field: "filter"},
		{name: "execution not found", err: describe(fmt.Errorf("get: %w", registry.ErrNotFound), "execution %q not found", "abc"),
			code: codes.NotFound, reason: "EXECUTION_NOT_FOUND", msg: `execution "abc" not found`},
		{name: "another node's id", err: notHeld("execution", "node-b_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701",
			fmt.Errorf("get: %w", &nodeid.OtherNodeError{ID: "node-b_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701", Owner: "node-b", Node: "node-a"})),
			code: codes.FailedPrecondition, reason: "OTHER_NODE",
			msg: `execution "node-b_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701" belongs to node "node-b", not to this node "node-a": send the request to the supervisor on node "node-b"`},
		{name: "an earlier run's id", err: notHeld("execution", "node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701",
			&nodeid.EarlierRunError{ID: "node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701", Node: "node-a"}),
			code: codes.NotFound, reason: "SUPERVISOR_RESTARTED",
			msg: `execution "node-a_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701" not found: the supervisor on node "node-a" made it before it restarted, and nothing survives a restart`},
		{name: "malformed id", err: notHeld("execution", "nope", fmt.Errorf("get: %w: %w", registry.ErrNotFound, nodeid.ErrMalformed)),
			code: codes.NotFound, reason: "EXECUTION_NOT_FOUND", msg: `execution "nope" not found: not an id this service makes (NODE_RUN_RANDOM)`},
		{name: "terminal", err: describe(registry.ErrTerminal, "execution abc already ended (COMPLETED)"), code: codes.FailedPrecondition, reason: "EXECUTION_ENDED"},
		{name: "queue full", err: describeFull(fmt.Errorf("execution: %w", &scheduler.FullError{Queued: 3, QueueSize: 3, Running: 2, MaxConcurrent: 2})),
			code: codes.ResourceExhausted, reason: "QUEUE_FULL", retry: true,
			msg: "execution queue full: 3 executions wait (--queue-size) for one of the 2 execution slots, all busy (--max-concurrent)"},
		{name: "memory budget full", err: fmt.Errorf("session: %w", &budget.Error{Asked: 512 << 20, Held: 16 << 30, Total: 16 << 30}),
			code: codes.ResourceExhausted, reason: "MEMORY_BUDGET", retry: true,
			msg: "session: budget: a memory limit of 512Mi does not fit the node's memory budget of 16Gi (--memory-budget): live sandboxes hold 16Gi, 0 bytes is free"},
		{name: "over the memory budget", err: &budget.Error{Asked: 17 << 30, Held: 0, Total: 16 << 30},
			code: codes.InvalidArgument, reason: "OVER_MEMORY_BUDGET", field: "limits.max_memory_bytes",
			msg: "budget: a memory limit of 17Gi is larger than the node's memory budget of 16Gi (--memory-budget)"},
		{name: "shutting down", err: execution.ErrShuttingDown, code: codes.Unavailable, reason: "SHUTTING_DOWN", msg: "supervisor is shutting down"},
		{name: "sandbox field", err: &session.FieldError{Field: "workdir", Reason: "x"}, code: codes.InvalidArgument, reason: "INVALID_FIELD", field: "workdir"},
		{name: "event offset", err: fmt.Errorf("%w: -1", eventlog.ErrInvalidOffset), code: codes.InvalidArgument, reason: "INVALID_OFFSET", field: "from_offset"},
		{name: "sandbox not found", err: fmt.Errorf("sandbox \"x\": %w", session.ErrNotFound), code: codes.NotFound, reason: "SANDBOX_NOT_FOUND"},
		{name: "quota", err: &session.QuotaError{Limit: "limit on sandboxes of this server", Flag: "--max-sandboxes", Max: 5, Asked: 6},
			code: codes.ResourceExhausted, reason: "QUOTA_EXCEEDED", retry: true,
			msg: "session: quota exceeded: 6 is over the limit on sandboxes of this server of 5 (--max-sandboxes)"},
		{name: "uid window full", err: fmt.Errorf("start: %w", sandbox.ErrNoIDRange), code: codes.ResourceExhausted, reason: "NO_UID_RANGE", retry: true,
			msg: "no free uid range for another sandbox: every range of the server's uid window is held"},
		{name: "events dropped", err: &eventlog.DroppedError{Offset: 3, First: 10}, code: codes.OutOfRange, reason: "EVENTS_DROPPED",
			msg: "eventlog: event offset 3 was dropped (the log keeps its newest events); the first offset held is 10"},
		{name: "offset ahead", err: &eventlog.AheadError{Offset: 30, Next: 10}, code: codes.OutOfRange, reason: "EVENT_OFFSET_AHEAD"},
		{name: "sandbox ending", err: session.ErrNotReady, code: codes.FailedPrecondition, reason: "SANDBOX_NOT_READY"},
		{name: "not a session exec", err: session.ErrNotSessionExec, code: codes.FailedPrecondition, reason: "NOT_A_SESSION_EXEC"},
		{name: "stdin closed", err: session.ErrStdinClosed, code: codes.FailedPrecondition, reason: "STDIN_CLOSED"},
		{name: "stdin write waiting", err: fmt.Errorf("exec \"x\": %w", session.ErrStdinBusy), code: codes.ResourceExhausted, reason: "STDIN_WRITE_WAITING", retry: true,
			msg: "exec \"x\": session: another write to the exec's standard input is waiting for the program to read"},
		{name: "exec not running", err: session.ErrExecNotRunning, code: codes.FailedPrecondition, reason: "EXEC_NOT_RUNNING"},
		{name: "sessions shutting down", err: session.ErrShuttingDown, code: codes.Unavailable, reason: "SHUTTING_DOWN", msg: "supervisor is shutting down"},
		{name: "file not found", err: &session.FileError{Op: "download", Path: "/x", Err: &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}},
			code: codes.NotFound, reason: "FILE_NOT_FOUND"},
		{name: "file exists", err: &session.FileError{Op: "mkdir", Path: "/x", Err: syscall.EEXIST}, code: codes.AlreadyExists, reason: "FILE_EXISTS"},
		{name: "workspace full", err: &session.FileError{Op: "upload", Path: "/x", Err: syscall.ENOSPC}, code: codes.ResourceExhausted, reason: "WORKSPACE_FULL"},
		{name: "not a directory", err: &session.FileError{Op: "list", Path: "/x", Err: syscall.ENOTDIR}, code: codes.FailedPrecondition, reason: "NOT_A_DIRECTORY"},
		{name: "directory not empty", err: &session.FileError{Op: "remove", Path: "/x", Err: syscall.ENOTEMPTY}, code: codes.FailedPrecondition, reason: "DIRECTORY_NOT_EMPTY"},
		{name: "file permission", err: &session.FileError{Op: "upload", Path: "/usr/x", Err: syscall.EACCES}, code: codes.PermissionDenied, reason: "FILE_PERMISSION_DENIED"},
		{name: "file op of a departed caller", err: &session.FileError{Op: "upload", Path: "/x", Err: context.Canceled}, code: codes.Canceled,
			msg: "context canceled"},
		{name: "file op, other", err: &session.FileError{Op: "upload", Path: "/x", Err: errors.New("worker lost")}, code: codes.Internal, reason: "INTERNAL"},
		{name: "caller gone", err: ctx.Err(), code: codes.Canceled},
		{name: "caller's deadline", err: context.DeadlineExceeded, code: codes.DeadlineExceeded},
		{name: "anything else", err: errors.New("output subscription ended without a result"), code: codes.Internal, reason: "INTERNAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := faultOf(tt.err)
			if f.code != tt.code || f.reason != tt.reason || f.field != tt.field || f.retry != tt.retry {
				t.Errorf("faultOf = %+v, want code %s reason %q field %q retry %v", f, tt.code, tt.reason, tt.field, tt.retry)
			}
			st := status.Convert(rpcError(tt.err))
			want := tt.msg
			if want == "" && tt.code != codes.Canceled && tt.code != codes.DeadlineExceeded {
				want = tt.err.Error()
			}
			if st.Code() != tt.code || (want != "" && st.Message() != want) {
				t.Errorf("rpcError = %s %q, want %s %q", st.Code(), st.Message(), tt.code, want)
			}
			checkDetails(t, st, tt.reason, tt.field, tt.retry)
		})
	}
	if rpcError(nil) != nil {
		t.Error("rpcError(nil) != nil")
	}
	already := status.Error(codes.Aborted, "as is")
	if got := rpcError(already); got != already {
		t.Errorf("rpcError(status) = %v, want it unchanged", got)
	}
}

// TestHandlersMapErrors: handlers return the map's statuses, with the
// messages the handler knows.
func TestHandlersMapErrors(t *testing.T) {
	s := preparingServer(t)
	ctx := context.Background()
	_, err := s.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "nope"})
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != `execution "nope" not found: not an id this service makes (NODE_RUN_RANDOM)` {
		t.Errorf("GetExecution(unknown) = %v", err)
	}
	_, err = s.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "execution_id is empty" {
		t.Errorf("CancelExecution(no id) = %v", err)
	}
	_, err = s.ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{Limit: -1})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument {
		t.Errorf("ListExecutions(limit -1) = %v", err)
	}
	_, err = s.ExecuteAsync(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: "x"}})
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != `cached script "x" not found: the script cache is disabled` {
		t.Errorf("ExecuteAsync(cached, no cache) = %v", err)
	}
}

// TestCancelRacingCompletion: a cancel that reaches a running execution
// which then completes on its own (the program exited before the kill
// landed) answers success false with the final state and a message
// saying why, never a bare false.
func TestCancelRacingCompletion(t *testing.T) {
	s := preparingServer(t)
	e := s.reg.Create(registry.Meta{Runtime: "goja", Owner: caller(context.Background()).String()})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// The run's stop arrives after its program exited: it completes.
	e.SetCancel(func() {
		e.Finish(registry.Result{State: registry.StateCompleted, Reason: registry.ReasonExited, Success: true})
	})
	resp, err := s.CancelExecution(context.Background(), &sandboxv1.CancelExecutionRequest{ExecutionId: e.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSuccess() || resp.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || resp.GetMessage() != "Execution already finished" {
		t.Fatalf("CancelExecution = %v, want success false, COMPLETED, message \"Execution already finished\"", resp)
	}
}

// checkDetails: st carries an ErrorInfo with reason in ErrorDomain when
// reason is set, a BadRequest naming field with st's message when field
// is set, a RetryInfo of RetryDelay exactly when retry; nothing else.
func checkDetails(t *testing.T, st *status.Status, reason, field string, retry bool) {
	t.Helper()
	var info *errdetails.ErrorInfo
	var br *errdetails.BadRequest
	var ri *errdetails.RetryInfo
	for _, d := range st.Details() {
		switch x := d.(type) {
		case *errdetails.ErrorInfo:
			info = x
		case *errdetails.BadRequest:
			br = x
		case *errdetails.RetryInfo:
			ri = x
		default:
			t.Errorf("unexpected detail %T %v", d, d)
		}
	}
	if (info != nil) != (reason != "") || info.GetReason() != reason || (info != nil && info.GetDomain() != ErrorDomain) {
		t.Errorf("ErrorInfo %v, want reason %q in %s", info, reason, ErrorDomain)
	}
	if field == "" && br != nil {
		t.Errorf("BadRequest %v, want none", br)
	}
	if field != "" {
		if v := br.GetFieldViolations(); len(v) != 1 || v[0].GetField() != field || v[0].GetDescription() != st.Message() {
			t.Errorf("BadRequest %v, want one violation of %s", br, field)
		}
	}
	if (ri != nil) != retry || (ri != nil && ri.GetRetryDelay().AsDuration() != RetryDelay) {
		t.Errorf("RetryInfo %v, want one: %v", ri, retry)
	}
}

// TestReasonsDocumented: every reason the map gives is in
// proto/PROTOCOL.md's table, where clients look them up.
func TestReasonsDocumented(t *testing.T) {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../proto/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := regexp.MustCompile(`reason: "([A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(reasons) < 10 {
		t.Fatalf("found %d reasons in errors.go: the pattern no longer matches the map", len(reasons))
	}
	for _, r := range reasons {
		if !strings.Contains(string(doc), "`"+r[1]+"`") {
			t.Errorf("reason %s is not in proto/PROTOCOL.md", r[1])
		}
	}
}
