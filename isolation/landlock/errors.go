package landlock

import (
	"errors"

	"github.com/execfarm/execfarm/isolation"
)

var (
	// ErrNotSupported is returned when the platform or the running kernel
	// has no Landlock (not built in, or not in the lsm= boot list). It
	// wraps isolation.ErrNotSupported.
	ErrNotSupported = isolation.NotSupported("landlock: not supported")

	// ErrConfig means a Config cannot be applied: no path to read, or a
	// path that is not absolute.
	ErrConfig = errors.New("landlock: invalid config")
)
