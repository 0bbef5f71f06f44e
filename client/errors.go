package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every error a call of this package returns for a refusal of the server
// (or of the connection to it) is one of the types below, one per failure
// kind, made in one place (wrapError) from the gRPC code and the
// google.rpc.ErrorInfo reason the server attaches (execfarm's reasons:
// SANDBOX_NOT_FOUND, LIMIT_OUT_OF_RANGE, QUEUE_FULL...; PROTOCOL.md lists
// them). Test for a kind with errors.As:
//
//	var nf *client.NotFoundError
//	if errors.As(err, &nf) { ... nf.Reason ... }
//
// Each keeps the server's message, and status.FromError still finds the
// gRPC status (GRPCStatus), so code written against the raw stubs keeps
// working. A refusal the package makes itself before calling (an unknown
// runtime name) is an *InvalidArgumentError too, naming the field.

// Status is what every error type of the package holds: the gRPC code,
// the server's ErrorInfo reason ("" when it sent none) and its message.
type Status struct {
	Code    codes.Code
	Reason  string
	Message string
	st      *status.Status
}

// Error returns "CODE: message", with the code's wire name
// ("NOT_FOUND: sandbox \"x\" not found").
func (s *Status) Error() string {
	return fmt.Sprintf("%s: %s", code.Code(s.Code), s.Message)
}

// GRPCStatus returns the gRPC status the error came from, details
// included: status.FromError(err) and status.Code(err) see through the
// package's types.
func (s *Status) GRPCStatus() *status.Status { return s.st }

// status returns s; it makes every type of the package a statusError.
func (s *Status) status() *Status { return s }

type statusError interface {
	error
	status() *Status
}

// NotFoundError: the sandbox, execution, file or cached script does not
// exist for this caller (NOT_FOUND). Reason names which
// (SANDBOX_NOT_FOUND, EXECUTION_NOT_FOUND, FILE_NOT_FOUND...).
type NotFoundError struct{ Status }

// InvalidArgumentError: the request was refused as it is
// (INVALID_ARGUMENT). Field is the request field at fault, as the proto
// names it ("limits.max_memory_bytes", "runtime"), from the server's
// google.rpc.BadRequest.
type InvalidArgumentError struct {
	Status
	Field string
}

// ResourceExhaustedError: a bound was reached (RESOURCE_EXHAUSTED).
// Reason names it (QUEUE_FULL, QUOTA_EXCEEDED, MEMORY_BUDGET,
// WORKSPACE_FULL...). RetryDelay, from google.rpc.RetryInfo, is how long
// to wait before the same request may succeed; 0 when retrying does not
// help.
type ResourceExhaustedError struct {
	Status
	RetryDelay time.Duration
}

// UnauthenticatedError: the server wants a bearer token this client did
// not send, or sent another (UNAUTHENTICATED; EXECFARM_TOKEN,
// EXECFARM_TOKEN_FILE).
type UnauthenticatedError struct{ Status }

// PermissionDeniedError: the caller may not do this (PERMISSION_DENIED),
// e.g. write a file into a sandbox's read-only root
// (FILE_PERMISSION_DENIED).
type PermissionDeniedError struct{ Status }

// UnavailableError: no supervisor answered at Address (Reason ""), or the
// supervisor refused for now (Reason SHUTTING_DOWN,
// TRANSFORM_HELPER_FAILED).
type UnavailableError struct {
	Status
	// Address is the supervisor's address ("unix:///run/execfarm/execfarm.sock").
	Address string
}

// Unreachable reports whether no supervisor answered at all (rather than
// one refusing).
func (e *UnavailableError) Unreachable() bool { return e.Reason == "" }

// DeadlineExceededError: the call's deadline passed (DEADLINE_EXCEEDED).
// errors.Is(err, context.DeadlineExceeded) holds for it.
type DeadlineExceededError struct{ Status }

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *DeadlineExceededError) Is(target error) bool { return target == context.DeadlineExceeded }

// CanceledError: the call's context was cancelled (CANCELED).
// errors.Is(err, context.Canceled) holds for it.
type CanceledError struct{ Status }

// Is makes errors.Is(err, context.Canceled) true.
func (e *CanceledError) Is(target error) bool { return target == context.Canceled }

// FailedPreconditionError: the request came at the wrong time for what it
// names (FAILED_PRECONDITION): the sandbox is not ready
// (SANDBOX_NOT_READY), the execution already ended (EXECUTION_ENDED), the
// path is a directory (IS_A_DIRECTORY)...
type FailedPreconditionError struct{ Status }

// AlreadyExistsError: the path exists (ALREADY_EXISTS, FILE_EXISTS).
type AlreadyExistsError struct{ Status }

// OutOfRangeError: an event offset the log no longer holds, or one ahead
// of it (OUT_OF_RANGE: EVENTS_DROPPED, EVENT_OFFSET_AHEAD).
type OutOfRangeError struct{ Status }

// UnimplementedError: the server lacks the call or the runtime
// (UNIMPLEMENTED, RUNTIME_UNAVAILABLE).
type UnimplementedError struct{ Status }

// InternalError: any other code (INTERNAL, UNKNOWN, DATA_LOSS, ABORTED):
// the server failed, or answered what this client does not know.
type InternalError struct{ Status }

// Reason returns the ErrorInfo reason of an error of the package
// ("QUEUE_FULL"), "" for none or for another error.
func Reason(err error) string {
	var se statusError
	if errors.As(err, &se) {
		return se.status().Reason
	}
	return ""
}

// wrapError is the one map from what a call returned to the package's
// types: nil stays nil, an error of the package stays as it is, a gRPC
// status (or a context error) becomes its type; anything else (a local
// file's read error) is returned as it is. addr is the supervisor's
// address, for UnavailableError.
func wrapError(err error, addr string) error {
	if err == nil {
		return nil
	}
	var se statusError
	if errors.As(err, &se) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		st = status.FromContextError(err)
	}
	return fromStatus(st, addr)
}

// fromStatus is wrapError's map for a status.
func fromStatus(st *status.Status, addr string) error {
	base := Status{Code: st.Code(), Message: st.Message(), st: st}
	var field string
	var retry time.Duration
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if base.Reason == "" {
				base.Reason = d.GetReason()
			}
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 && field == "" {
				field = v[0].GetField()
			}
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		}
	}
	switch st.Code() {
	case codes.NotFound:
		return &NotFoundError{base}
	case codes.InvalidArgument:
		return &InvalidArgumentError{Status: base, Field: field}
	case codes.ResourceExhausted:
		return &ResourceExhaustedError{Status: base, RetryDelay: retry}
	case codes.Unauthenticated:
		return &UnauthenticatedError{base}
	case codes.PermissionDenied:
		return &PermissionDeniedError{base}
	case codes.Unavailable:
		return &UnavailableError{Status: base, Address: addr}
	case codes.DeadlineExceeded:
		return &DeadlineExceededError{base}
	case codes.Canceled:
		return &CanceledError{base}
	case codes.FailedPrecondition:
		return &FailedPreconditionError{base}
	case codes.AlreadyExists:
		return &AlreadyExistsError{base}
	case codes.OutOfRange:
		return &OutOfRangeError{base}
	case codes.Unimplemented:
		return &UnimplementedError{base}
	}
	return &InternalError{base}
}

// invalidArgument is a refusal of the package itself, before any call.
func invalidArgument(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, msg)
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}}); err == nil {
		st = d
	}
	return &InvalidArgumentError{Status: Status{Code: codes.InvalidArgument, Message: msg, st: st}, Field: field}
}
