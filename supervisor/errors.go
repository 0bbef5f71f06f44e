package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/profile"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
	"github.com/execfarm/execfarm/supervisor/session"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// Every error a handler returns goes through rpcError, the one map from
// the packages' errors (their errors.go: sentinels and typed errors) to
// gRPC statuses. Packages below know no gRPC; handlers build no status
// themselves.
//
// To add an error: define it where it arises (a sentinel in the package's
// errors.go, or a typed error carrying what a caller needs, with Unwrap),
// and add its case to faultOf with its code, a stable reason and, for
// INVALID_ARGUMENT, the request field at fault. rpcError turns a fault
// into a status; it is the one place that attaches the fault's details
// (google.rpc.ErrorInfo from reason and ErrorDomain, google.rpc.BadRequest
// from field, google.rpc.RetryInfo when retry).

// fault is how an error reaches a gRPC caller.
type fault struct {
	code codes.Code
	// reason is the ErrorInfo reason: UPPER_SNAKE_CASE, stable, one per
	// cause ("LIMIT_OUT_OF_RANGE", "QUEUE_FULL").
	reason string
	// field is the request field at fault, as the proto names it with its
	// message path ("limits.max_memory_bytes"): a BadRequest field
	// violation. Every INVALID_ARGUMENT names one.
	field string
	// retry marks a refusal that the same request may overcome later (a
	// full queue): a RetryInfo detail.
	retry bool
	// msg is the status message; "" = the error's own text.
	msg string
}

// ErrorDomain is the google.rpc.ErrorInfo domain of execfarm's errors:
// with the reason, it names an error's cause for programs.
const ErrorDomain = "execfarm.dev"

// RetryDelay is the google.rpc.RetryInfo delay of a refusal that the same
// request may overcome later (a full queue): how long a client should
// wait before it tries again.
const RetryDelay = time.Second

// rpcError returns err as a gRPC status error: err itself when it already
// is one (nil stays nil), else the status of faultOf(err) with its
// details: google.rpc.ErrorInfo (the fault's reason, ErrorDomain) for
// every fault that has a reason, google.rpc.BadRequest (one field
// violation: the request field at fault and the message) for every
// INVALID_ARGUMENT, google.rpc.RetryInfo (RetryDelay) for a refusal
// worth retrying.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	f := faultOf(err)
	msg := f.msg
	if msg == "" {
		msg = err.Error()
	}
	st := status.New(f.code, msg)
	var details []protoadapt.MessageV1
	if f.reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: f.reason, Domain: ErrorDomain})
	}
	if f.field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: f.field, Description: msg},
		}})
	}
	if f.retry {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(RetryDelay)})
	}
	if len(details) == 0 {
		return st.Err()
	}
	withDetails, derr := st.WithDetails(details...)
	if derr != nil {
		return st.Err() // details are an addition: never lose the status
	}
	return withDetails.Err()
}

// faultOf is the map: the first case that matches err decides.
func faultOf(err error) fault {
	var (
		req      *requestError
		lim      *limits.FieldError
		syn      *transform.SyntaxError
		field    *session.FieldError
		quota    *session.QuotaError
		file     *session.FileError
		dropped  *eventlog.DroppedError
		jobBytes *execution.JobBytesError
		arg      *program.ArgError
		nul      *program.NULError
		size     *program.SizeError
		xlimit   *transformer.LimitError
		utf8Err  *invalidUTF8Error
		// An id this node does not hold because another node, or an
		// earlier run of this node's supervisor, made it.
		other   *nodeid.OtherNodeError
		earlier *nodeid.EarlierRunError
	)
	switch {
	// Requests refused before anything ran.
	case errors.As(err, &req):
		return fault{code: codes.InvalidArgument, reason: "INVALID_REQUEST", field: req.field}
	case errors.As(err, &lim):
		return fault{code: codes.InvalidArgument, reason: "LIMIT_OUT_OF_RANGE", field: lim.Field}
	case errors.As(err, &syn):
		return fault{code: codes.InvalidArgument, reason: "SYNTAX_ERROR", field: "code", msg: syn.Error()}
	case errors.As(err, &xlimit):
		return fault{code: codes.InvalidArgument, reason: "TRANSFORM_LIMIT", field: "code"}
	case errors.As(err, &size):
		return fault{code: codes.InvalidArgument, reason: "PROGRAM_TOO_LARGE", field: "code"}
	case errors.Is(err, transformer.ErrBusy):
		return fault{code: codes.ResourceExhausted, reason: "TRANSFORM_BUSY", retry: true}
	case errors.Is(err, transformer.ErrStarved):
		// The host's CPU, not the code: retryable, as TRANSFORM_BUSY.
		return fault{code: codes.ResourceExhausted, reason: "TRANSFORM_STARVED", retry: true}
	case errors.Is(err, transformer.ErrHelper):
		return fault{code: codes.Unavailable, reason: "TRANSFORM_HELPER_FAILED", retry: true}
	case errors.Is(err, transform.ErrEmptyCode):
		return fault{code: codes.InvalidArgument, reason: "EMPTY_CODE", field: "code", msg: "code is empty"}
	case errors.As(err, &arg):
		return fault{code: codes.InvalidArgument, reason: "ARGUMENT_TOO_LONG", field: arg.Field}
	case errors.As(err, &nul):
		return fault{code: codes.InvalidArgument, reason: "NUL_IN_ARGUMENT", field: nul.Field}
	case errors.As(err, &utf8Err):
		return fault{code: codes.InvalidArgument, reason: "INVALID_UTF8", field: utf8Err.field}
	case errors.Is(err, program.ErrArgv):
		return fault{code: codes.InvalidArgument, reason: "INVALID_FIELD", field: "argv"}
	case errors.Is(err, program.ErrUnknownRuntime):
		return fault{code: codes.InvalidArgument, reason: "UNKNOWN_RUNTIME", field: "runtime"}
	case errors.Is(err, program.ErrNoTestMode):
		return fault{code: codes.InvalidArgument, reason: "NO_TEST_MODE", field: "runtime"}
	case errors.Is(err, program.ErrBadEnv):
		return fault{code: codes.InvalidArgument, reason: "INVALID_ENV", field: "env"}
	case errors.Is(err, program.ErrUnavailable):
		return fault{code: codes.Unimplemented, reason: "RUNTIME_UNAVAILABLE"}
	case errors.Is(err, cache.ErrAmbiguous):
		return fault{code: codes.InvalidArgument, reason: "CACHED_SCRIPT_AMBIGUOUS", field: "cached"}
	case errors.Is(err, cache.ErrInvalidFilter):
		return fault{code: codes.InvalidArgument, reason: "INVALID_FILTER", field: "filter"}
	case errors.Is(err, cache.ErrNotFound):
		return fault{code: codes.NotFound, reason: "CACHED_SCRIPT_NOT_FOUND"}
	case errors.As(err, &other):
		return fault{code: codes.FailedPrecondition, reason: "OTHER_NODE"}
	case errors.As(err, &earlier):
		return fault{code: codes.NotFound, reason: "SUPERVISOR_RESTARTED"}
	case errors.Is(err, registry.ErrNotFound):
		return fault{code: codes.NotFound, reason: "EXECUTION_NOT_FOUND"}
	// Session sandboxes.
	case errors.As(err, &field):
		return fault{code: codes.InvalidArgument, reason: "INVALID_FIELD", field: field.Field}
	case errors.Is(err, profile.ErrUnknown):
		return fault{code: codes.InvalidArgument, reason: "UNKNOWN_PROFILE", field: "profile"}
	case errors.Is(err, eventlog.ErrInvalidOffset):
		return fault{code: codes.InvalidArgument, reason: "INVALID_OFFSET", field: "from_offset"}
	case errors.Is(err, session.ErrNotFound):
		return fault{code: codes.NotFound, reason: "SANDBOX_NOT_FOUND"}
	case errors.As(err, &quota):
		return fault{code: codes.ResourceExhausted, reason: "QUOTA_EXCEEDED", retry: true}
	case errors.Is(err, sandbox.ErrNoIDRange):
		return fault{code: codes.ResourceExhausted, reason: "NO_UID_RANGE", retry: true,
			msg: "no free uid range for another sandbox: every range of the server's uid window is held"}
	case errors.As(err, &dropped):
		return fault{code: codes.OutOfRange, reason: "EVENTS_DROPPED"}
	case errors.Is(err, eventlog.ErrOffsetAhead):
		return fault{code: codes.OutOfRange, reason: "EVENT_OFFSET_AHEAD"}
	case errors.Is(err, session.ErrNotReady):
		return fault{code: codes.FailedPrecondition, reason: "SANDBOX_NOT_READY"}
	case errors.Is(err, session.ErrNotSessionExec):
		return fault{code: codes.FailedPrecondition, reason: "NOT_A_SESSION_EXEC"}
	case errors.Is(err, session.ErrStdinClosed):
		return fault{code: codes.FailedPrecondition, reason: "STDIN_CLOSED"}
	case errors.Is(err, session.ErrStdinBusy):
		return fault{code: codes.ResourceExhausted, reason: "STDIN_WRITE_WAITING", retry: true}
	case errors.Is(err, session.ErrExecNotRunning):
		return fault{code: codes.FailedPrecondition, reason: "EXEC_NOT_RUNNING"}
	case errors.Is(err, session.ErrShuttingDown):
		return fault{code: codes.Unavailable, reason: "SHUTTING_DOWN", msg: "supervisor is shutting down"}
	case errors.As(err, &file):
		return fileFault(file)
	// Requests that came at the wrong time.
	case errors.Is(err, registry.ErrTerminal):
		return fault{code: codes.FailedPrecondition, reason: "EXECUTION_ENDED"}
	case errors.Is(err, budget.ErrTooLarge):
		return fault{code: codes.InvalidArgument, reason: "OVER_MEMORY_BUDGET", field: "limits.max_memory_bytes"}
	case errors.Is(err, budget.ErrExhausted):
		return fault{code: codes.ResourceExhausted, reason: "MEMORY_BUDGET", retry: true}
	case errors.Is(err, scheduler.ErrQueueFull):
		return fault{code: codes.ResourceExhausted, reason: "QUEUE_FULL", retry: true}
	case errors.As(err, &jobBytes):
		return fault{code: codes.ResourceExhausted, reason: "QUEUE_BYTES", retry: true}
	case errors.Is(err, transport.ErrSendBacklog):
		return fault{code: codes.ResourceExhausted, reason: "RESPONSE_BACKLOG", retry: true}
	case errors.Is(err, execution.ErrShuttingDown):
		return fault{code: codes.Unavailable, reason: "SHUTTING_DOWN", msg: "supervisor is shutting down"}
	// A handler's bug: logged with its stack, the caller told no more.
	case errors.As(err, new(*handlerPanic)):
		return fault{code: codes.Internal, reason: "HANDLER_PANIC", msg: "internal error: the supervisor failed to handle this call (it logged why)"}
	// The caller went away or ran out of time.
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		st := status.FromContextError(err)
		return fault{code: st.Code(), msg: st.Message()}
	}
	return fault{code: codes.Internal, reason: "INTERNAL"}
}

// fileFault maps the mechanism's failure of a file operation by what it
// kept of the kernel's answer.
func fileFault(e *session.FileError) fault {
	switch {
	case errors.Is(e, fs.ErrNotExist):
		return fault{code: codes.NotFound, reason: "FILE_NOT_FOUND"}
	case errors.Is(e, syscall.ENOTEMPTY): // which is also fs.ErrExist
		return fault{code: codes.FailedPrecondition, reason: "DIRECTORY_NOT_EMPTY"}
	case errors.Is(e, fs.ErrExist):
		return fault{code: codes.AlreadyExists, reason: "FILE_EXISTS"}
	case errors.Is(e, syscall.ENOSPC), errors.Is(e, syscall.EDQUOT), errors.Is(e, syscall.EFBIG):
		return fault{code: codes.ResourceExhausted, reason: "WORKSPACE_FULL"}
	case errors.Is(e, syscall.ENOTDIR):
		return fault{code: codes.FailedPrecondition, reason: "NOT_A_DIRECTORY"}
	case errors.Is(e, syscall.EISDIR):
		return fault{code: codes.FailedPrecondition, reason: "IS_A_DIRECTORY"}
	case errors.Is(e, syscall.ELOOP):
		return fault{code: codes.FailedPrecondition, reason: "TOO_MANY_SYMLINKS"}
	case errors.Is(e, sandbox.ErrNotRegular):
		return fault{code: codes.FailedPrecondition, reason: "NOT_A_REGULAR_FILE"}
	case errors.Is(e, syscall.EBUSY):
		return fault{code: codes.FailedPrecondition, reason: "BUSY"}
	case errors.Is(e, fs.ErrPermission):
		return fault{code: codes.PermissionDenied, reason: "FILE_PERMISSION_DENIED"}
	case errors.Is(e, context.Canceled), errors.Is(e, context.DeadlineExceeded):
		st := status.FromContextError(e.Err)
		return fault{code: st.Code(), msg: st.Message()}
	}
	if st, ok := status.FromError(e.Err); ok {
		return fault{code: st.Code(), msg: st.Message()}
	}
	return fault{code: codes.Internal, reason: "INTERNAL"}
}

// requestError is a request field a handler refuses by itself (empty,
// negative, unknown enum value): INVALID_ARGUMENT naming the field.
type requestError struct {
	field string // as faultOf's field
	msg   string
}

func (e *requestError) Error() string { return e.msg }

// badRequest returns a *requestError for field.
func badRequest(field, format string, args ...any) error {
	return &requestError{field: field, msg: fmt.Sprintf(format, args...)}
}

// described is err with the message a caller sees instead of err's own:
// what the handler knows and the package did not say ("execution \"x\"
// not found"). faultOf sees through it.
type described struct {
	msg string
	err error
}

func (e *described) Error() string { return e.msg }
func (e *described) Unwrap() error { return e.err }

// describe wraps err with the message format, args.
func describe(err error, format string, args ...any) error {
	return &described{msg: fmt.Sprintf(format, args...), err: err}
}

// describeFull gives a full queue's refusal (*scheduler.FullError) its
// cause as the message a caller sees (FullError.Cause: which bound is
// reached, and the flag that sets it); other errors are returned as
// they are.
func describeFull(err error) error {
	var full *scheduler.FullError
	if errors.As(err, &full) {
		return describe(err, "%s", full.Cause())
	}
	return err
}

// handlerPanic is a panic recovered in a gRPC handler (recoverHandler).
type handlerPanic struct {
	method string
	value  any
}

func (e *handlerPanic) Error() string {
	return fmt.Sprintf("%s: handler panicked: %v", e.method, e.value)
}
