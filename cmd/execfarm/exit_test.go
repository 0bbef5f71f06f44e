package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// TestExitForResult: each way an execution ends has its documented exit
// status (test/cli produces them end to end).
func TestExitForResult(t *testing.T) {
	o := func(r sandboxv1.TerminationReason, code, sig int32) *sandboxv1.ExecutionOutcome {
		return &sandboxv1.ExecutionOutcome{TerminationReason: r, ExitCode: code, Signal: sig}
	}
	truncated := func(code int32, stdout, stderr bool) *sandboxv1.ExecutionOutcome {
		return &sandboxv1.ExecutionOutcome{TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED,
			ExitCode: code, StdoutTruncated: stdout, StderrTruncated: stderr}
	}
	tests := []struct {
		success bool
		outcome *sandboxv1.ExecutionOutcome
		want    int
	}{
		{true, o(sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, 0, 0), 0},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, 3, 0), 3},
		// Exited 0 past the output limit: a limit was hit (137), not the
		// program's "1".
		{false, truncated(0, true, false), exitLimit},
		{false, truncated(0, false, true), exitLimit},
		// The program's own failure wins over the truncation.
		{false, truncated(3, true, true), 3},
		// Exited 0, not a success, and no limit named: the server's
		// answer is unexplained (execfarm's failure, not the program's).
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, 0, 0), exitFailed},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT, -1, 9), exitTimeout},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_CANCELLED, -1, 9), exitCancelled},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY, -1, 9), exitLimit},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_PIDS, 1, 0), exitLimit},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_CPU_TIME, -1, 9), exitLimit},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_OUTPUT_LIMIT, -1, 9), exitLimit},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_SIGNAL, -1, 11), 128 + 11},
		{false, o(sandboxv1.TerminationReason_TERMINATION_REASON_INTERNAL, 0, 0), exitFailed},
	}
	for _, tt := range tests {
		if got := exitForResult(tt.success, 0, tt.outcome); got != tt.want {
			t.Errorf("exitForResult(%v, %v) = %d, want %d", tt.success, tt.outcome, got, tt.want)
		}
	}
}

// TestExitForError: errors of the command line, the connection and the
// supervisor map to their documented statuses.
func TestExitForError(t *testing.T) {
	unavailable := func(msg, reason string) error {
		st, err := status.New(codes.Unavailable, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	helperFailed := unavailable("transform helper failed: EOF", "TRANSFORM_HELPER_FAILED")
	tests := []struct {
		err  error
		want int
	}{
		{exitError{code: 7}, 7},
		{fmt.Errorf("run: %w", exitError{code: exitPipe}), exitPipe},
		{&unreachableError{addr: "unix:///x", err: errors.New("refused")}, exitUnreachable},
		{status.Error(codes.Unavailable, "connection refused"), exitUnreachable},
		// The supervisor answered: it failed, it is not unreachable.
		{helperFailed, exitFailed},
		{reach(transport.Config{SocketPath: "/x"}, helperFailed), exitFailed},
		{unavailable("supervisor is shutting down", "SHUTTING_DOWN"), exitUnreachable},
		{failure{errors.New("start embedded supervisor")}, exitFailed},
		{status.Error(codes.Internal, "bug"), exitFailed},
		{status.Error(codes.InvalidArgument, "bad"), exitRefused},
		{status.Error(codes.NotFound, "no"), exitRefused},
		{status.Error(codes.ResourceExhausted, "full"), exitRefused},
		{status.Error(codes.Unauthenticated, "who"), exitRefused},
		{status.Error(codes.Canceled, "ctrl-c"), exitCancelled},
		{context.Canceled, exitCancelled},
		{errors.New("unknown flag: --bogus"), exitRefused},
	}
	for _, tt := range tests {
		if got := exitForError(tt.err); got != tt.want {
			t.Errorf("exitForError(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
