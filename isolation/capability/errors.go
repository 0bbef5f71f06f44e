package capability

import (
	"errors"

	"github.com/execfarm/execfarm/isolation"
)

var (
	// ErrNotSupported is returned on platforms without Linux
	// capabilities. It wraps isolation.ErrNotSupported.
	ErrNotSupported = isolation.NotSupported("capability: not supported on this platform")

	// ErrStatus means a /proc/<pid>/status text lacks a capability line or
	// has one that is not a 64-bit hexadecimal mask.
	ErrStatus = errors.New("capability: malformed status")

	// ErrStillHeld is returned by Restrict when, after the drop, the calling
	// thread still holds a capability outside the kept set.
	ErrStillHeld = errors.New("capability: capability still held after drop")
)
