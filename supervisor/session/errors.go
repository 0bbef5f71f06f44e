package session

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the session package. The mechanism's errors of file
// operations come wrapped in a *FileError.
var (
	// ErrNotFound: no such sandbox for this principal (never created,
	// ended, or another principal's).
	ErrNotFound = errors.New("session: sandbox not found")
	// ErrNotReady: the sandbox exists but serves nothing now (being
	// deleted or expiring, or its worker was lost).
	ErrNotReady = errors.New("session: sandbox not ready")
	// ErrShuttingDown: the supervisor is shutting down.
	ErrShuttingDown = errors.New("session: supervisor is shutting down")
	// ErrNotSessionExec: the execution is not an exec of a session
	// sandbox (WriteStdin, SignalExec).
	ErrNotSessionExec = errors.New("session: not an exec of a session sandbox")
	// ErrStdinClosed: the exec's standard input is closed, or was never
	// kept open (ExecParams.StdinOpen).
	ErrStdinClosed = errors.New("session: the exec's standard input is closed")
	// ErrStdinBusy: another write to the exec's standard input is
	// waiting for the program to read; one at a time may wait
	// (MaxStdinBuffer).
	ErrStdinBusy = errors.New("session: another write to the exec's standard input is waiting for the program to read")
	// ErrExecNotRunning: the exec has not started its program yet, or
	// has ended.
	ErrExecNotRunning = errors.New("session: the exec is not running")
)

// QuotaError is a request refused because it would exceed a limit of the
// server. Its message names the limit and the flag that sets it.
type QuotaError struct {
	// Limit names what is exceeded: "sandboxes on this server",
	// "sandboxes of this principal", "sandbox lifetime", "execs in this
	// sandbox".
	Limit string
	// Flag is the serve flag that sets it ("--max-sandboxes"), "" when
	// none does.
	Flag string
	// Max is the limit's value, in Unit.
	Max int64
	// Asked is what the request would have needed, in Unit.
	Asked int64
	// Unit names Max's and Asked's unit ("", "s").
	Unit string
}

func (e *QuotaError) Error() string {
	flag := ""
	if e.Flag != "" {
		flag = " (" + e.Flag + ")"
	}
	if e.Unit == "s" && e.Asked == 0 {
		return fmt.Sprintf("session: quota exceeded: a sandbox without expiry is over the %s of %d s%s", e.Limit, e.Max, flag)
	}
	return fmt.Sprintf("session: quota exceeded: %d%s is over the %s of %d%s%s", e.Asked, e.Unit, e.Limit, e.Max, e.Unit, flag)
}

// FieldError is a request field the session package refuses: a label, a
// lifetime, a path. Field is the request field as the wire names it
// ("labels", "workdir", "path", "max_entries").
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "session: invalid " + e.Field + ": " + e.Reason }

// FileError is the mechanism's failure of a file operation on a path
// inside a sandbox. Err keeps what the mechanism said: fs.ErrNotExist,
// fs.ErrExist, fs.ErrPermission, or an errno (syscall.ENOSPC, ENOTDIR,
// EISDIR, ENOTEMPTY, ELOOP...); compare with errors.Is.
type FileError struct {
	// Op is "upload", "download", "list", "stat", "remove" or "mkdir".
	Op string
	// Path is the absolute path inside the sandbox.
	Path string
	Err  error
}

func (e *FileError) Error() string { return "session: " + e.Op + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FileError) Unwrap() error { return e.Err }

// fileError wraps a mechanism's err of op on path; nil stays nil, and
// errors of the session package itself pass as they are.
func fileError(op, path string, err error) error {
	var fe *FieldError
	switch {
	case err == nil, errors.Is(err, ErrNotReady), errors.As(err, &fe):
		return err
	}
	return &FileError{Op: op, Path: path, Err: err}
}

// EndedError is the error of a call on the caller's sandbox that has
// ended, within the retention of its event log (Config.EndedRetention):
// it says when and why, where a sandbox never made would say nothing. It
// matches ErrNotFound.
type EndedError struct {
	ID       string
	At       time.Time // when it ended
	Reason   EndReason
	Message  string    // why, as its last event says
	LogUntil time.Time // its event log is kept until then at the latest
}

func (e *EndedError) Error() string {
	return fmt.Sprintf("sandbox %q ended at %s (%s: %s); its event log is kept until %s at the latest",
		e.ID, e.At.UTC().Format(time.RFC3339), e.Reason, e.Message, e.LogUntil.UTC().Format(time.RFC3339))
}

// Is matches ErrNotFound.
func (e *EndedError) Is(target error) bool { return target == ErrNotFound }
