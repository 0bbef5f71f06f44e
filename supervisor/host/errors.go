package host

import (
	"errors"

	"github.com/execfarm/execfarm/isolation/probe"
)

var (
	// ErrShared is wrapped by Lock when another supervisor holds one of
	// the locks: two supervisors sharing a cgroup parent, a uid window or
	// a state directory would clean up (kill) each other's sandboxes at
	// start and could give two sandboxes one host uid.
	ErrShared = errors.New("host: another execfarm serve uses the same resources")

	// ErrCannotIsolate is wrapped by Check when a required isolation
	// layer is missing and the operator did not allow running without it.
	// It is probe.ErrHostCannotIsolate, so errors.Is works with either.
	ErrCannotIsolate = probe.ErrHostCannotIsolate

	// errLocked is wrapped by lockFile's error for a lock held elsewhere;
	// its text reads inside ErrShared's message ("the uid window … is
	// locked: held by pid N").
	errLocked = errors.New("locked")
)
