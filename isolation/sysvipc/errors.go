package sysvipc

import (
	"errors"

	"github.com/execfarm/execfarm/isolation"
)

// ErrNotSet is returned by Apply when a sysctl reads back other than what
// was written: the namespace does not have its bounds, and the caller must
// not run a program in it.
var ErrNotSet = errors.New("sysvipc: limit not set")

// ErrNotSupported is returned by Apply off Linux.
var ErrNotSupported = isolation.NotSupported("sysvipc: not supported")
