package forkserver

import (
	"errors"
	"syscall"
)

// SpawnError is a spawn the fork server refused or failed: the server's
// error text, and the errno at the root of it, carried across the socket
// so that errors.Is(err, syscall.ENOENT) (or os.ErrNotExist,
// os.ErrPermission...) holds on the client as it did in the server.
type SpawnError struct {
	// Msg is the server's error text.
	Msg string
	// Errno is the system call error it wrapped, 0 if none.
	Errno syscall.Errno
}

func (e *SpawnError) Error() string { return e.Msg }

// Unwrap returns the errno, or nil without one.
func (e *SpawnError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// errnoOf returns the errno err wraps, 0 if none.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}
