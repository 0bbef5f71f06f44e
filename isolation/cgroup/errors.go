package cgroup

import (
	"errors"

	"github.com/execfarm/execfarm/isolation"
)

var (
	// ErrNotSupported is isolation.ErrNotSupported: the platform or this
	// cgroup version lacks the operation (FD on v1, anything off Linux).
	ErrNotSupported = isolation.ErrNotSupported
	// ErrUnavailable means no usable cgroup hierarchy was found.
	ErrUnavailable = errors.New("cgroup: no usable cgroup hierarchy")
	// ErrControllerMissing means a controller the sandbox needs is not
	// mounted (v1) or not available to the parent cgroup (v2), or a file
	// the limits need does not exist.
	ErrControllerMissing = errors.New("cgroup: controller missing")
	// ErrInvalidName means a sandbox cgroup name is not one plain path
	// element.
	ErrInvalidName = errors.New("cgroup: invalid cgroup name")
	// ErrInvalidLimits means a Limits field is out of range.
	ErrInvalidLimits = errors.New("cgroup: invalid limits")
	// ErrKillTimeout means processes were still in the cgroup when Kill's
	// deadline passed.
	ErrKillTimeout = errors.New("cgroup: processes left after kill")
	// ErrNotDelegated means that, on cgroup v2, the supervisor's own
	// cgroup cannot be given the controllers sandboxes need: they are not
	// delegated to it (absent from its cgroup.controllers), it is not a
	// domain cgroup, or its interface files are not writable (see Place).
	ErrNotDelegated = errors.New("cgroup: the supervisor's cgroup cannot delegate memory, cpu and pids to sandboxes")
	// ErrMalformed means a cgroup file did not have the expected format.
	ErrMalformed = errors.New("cgroup: malformed cgroup file")
)
