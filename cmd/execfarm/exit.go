package main

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Exit statuses of the client commands, in the spirit of docker's 125,
// 126, 127 (exitCodesHelp documents them; test/cli produces each).
const (
	// exitTimeout: the execution's wall-clock timeout ended it (as
	// timeout(1) exits).
	exitTimeout = 124
	// exitFailed: execfarm failed to run it: the sandbox could not start,
	// the worker was lost, the supervisor answered INTERNAL, or an
	// embedded supervisor could not start.
	exitFailed = 125
	// exitRefused: the command line or the request is wrong or names
	// something that does not exist; nothing ran (INVALID_ARGUMENT,
	// NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, PERMISSION_DENIED,
	// UNAUTHENTICATED, UNIMPLEMENTED; an unknown flag, a missing file).
	exitRefused = 126
	// exitNotStarted: the program the execution names could not be
	// started (the server's exit code for it, as a shell's for a command
	// it cannot run: its working directory may not be entered). The
	// server's error says why; the CLI prints it.
	exitNotStarted = 126
	// exitUnreachable: no supervisor answered (nothing listens at the
	// address), or health found it not healthy.
	exitUnreachable = 127
	// exitSignalBase + N: the program was killed by signal N (not by a
	// limit or a cancel), as a shell reports it.
	exitSignalBase = 128
	// exitCancelled: the execution was cancelled (CancelExecution, or
	// this command interrupted by Ctrl-C or SIGTERM): 128 + SIGINT.
	exitCancelled = 130
	// exitLimit: a limit stopped the program: memory (OOM kill),
	// processes, CPU time, output; or the program exited 0 but its output
	// passed max_output_bytes and was truncated (the server's success is
	// false: DESIGN.md, "success true only for a normal end without a
	// limit hit"). 128 + SIGKILL, as docker reports an OOM kill.
	exitLimit = 137
	// exitPipe: whoever read this command's output went away (| head).
	exitPipe = 141
)

// exitCodesHelp is the table of exit statuses, for --help and README.
const exitCodesHelp = `Exit status (run, exec, test, status --wait, and where it applies the others):
  0        success (the execution succeeded; every test passed)
  1-255    run, exec, status: the program's own exit code when it exited with one
  1        test: a test failed; sandbox status: not ready; sandbox rm: one
           of them was not removed
  124      the execution timed out (wall clock)
  125      execfarm failed: the sandbox could not start, the worker was lost,
           the supervisor answered INTERNAL, or an embedded one could not start
  126      refused: a wrong command line, or a request the supervisor refused
           (invalid argument, not found, queue full, not authenticated...);
           or the program could not be started (exec --workdir a directory
           the sandbox user may not enter), its reason on stderr
  127      no supervisor reachable, or it is not healthy (health)
  130      cancelled (cancel, Ctrl-C)
  137      stopped by a limit: memory (OOM kill), processes, CPU time, output;
           or output truncated: the program exited 0 but a stream passed
           max_output_bytes (--output-limit), its middle dropped and marked
           on stderr (a nonzero exit code of the program's wins)
  128+N    killed by signal N
  141      the reader of this command's output went away`

// exitError carries a process exit status out of a command; msg, when
// set, is printed first ("execfarm: msg").
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}

// failure marks an error as execfarm's own failure (exitFailed).
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// exitForResult is the exit status of a finished execution: 0 when it
// succeeded, else by why it ended; a program that exited with a nonzero
// code gets that code even when its output was also truncated.
func exitForResult(success bool, state sandboxv1.ExecutionState, o *sandboxv1.ExecutionOutcome) int {
	if success {
		return 0
	}
	switch o.GetTerminationReason() {
	case sandboxv1.TerminationReason_TERMINATION_REASON_EXITED:
		if c := int(o.GetExitCode()); c > 0 && c <= 255 {
			return c
		}
		if o.GetStdoutTruncated() || o.GetStderrTruncated() {
			return exitLimit // exited 0, yet its output passed the limit
		}
	case sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT:
		return exitTimeout
	case sandboxv1.TerminationReason_TERMINATION_REASON_CANCELLED:
		return exitCancelled
	case sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY, sandboxv1.TerminationReason_TERMINATION_REASON_PIDS,
		sandboxv1.TerminationReason_TERMINATION_REASON_CPU_TIME, sandboxv1.TerminationReason_TERMINATION_REASON_OUTPUT_LIMIT:
		return exitLimit
	case sandboxv1.TerminationReason_TERMINATION_REASON_SIGNAL:
		if s := int(o.GetSignal()); s > 0 && s < 128 {
			return exitSignalBase + s
		}
	}
	if state == sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT {
		return exitTimeout
	}
	if state == sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED {
		return exitCancelled
	}
	return exitFailed
}

// exitForError is the exit status of a command that failed with err.
func exitForError(err error) int {
	var ee exitError
	var un *unreachableError
	var f failure
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &un):
		return exitUnreachable
	case errors.As(err, &f):
		return exitFailed
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable:
			if r := reason(st); r != "" && r != "SHUTTING_DOWN" {
				return exitFailed // it answered: it failed (a transform helper, say)
			}
			return exitUnreachable
		case codes.Canceled:
			return exitCancelled
		case codes.Internal, codes.Unknown, codes.DataLoss, codes.DeadlineExceeded, codes.Aborted:
			return exitFailed
		}
		return exitRefused
	}
	return exitRefused // the command line, a file it names
}

// unreachableError is a supervisor that did not answer at addr.
type unreachableError struct {
	addr string
	err  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no supervisor answers at %s (%s)\n"+
		"  start one: execfarm serve\n"+
		"  or point at one: --socket PATH (SANDBOX_SOCKET_PATH), or --tcp --host HOST --port PORT (SANDBOX_USE_TCP=1, SANDBOX_TCP_HOST, SANDBOX_TCP_PORT)",
		e.addr, describe(e.err))
}

func (e *unreachableError) Unwrap() error { return e.err }
