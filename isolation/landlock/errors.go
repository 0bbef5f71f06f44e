package landlock

import "errors"

var (
	// ErrNotSupported is returned when the platform or the running kernel
	// has no Landlock (not built in, or not in the lsm= boot list).
	ErrNotSupported = errors.New("landlock: not supported")

	// ErrConfig means a Config cannot be applied: no path to read, or a
	// path that is not absolute.
	ErrConfig = errors.New("landlock: invalid config")
)
