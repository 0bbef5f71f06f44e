//go:build !linux

package seccomp

import (
	"fmt"
	"runtime"
)

// Load installs the sandbox's seccomp filter; seccomp exists only on Linux,
// so here it returns an error wrapping ErrNotSupported.
func Load() error {
	return fmt.Errorf("load seccomp filter on %s: %w", runtime.GOOS, ErrNotSupported)
}

// Supported reports whether this process can install the sandbox's filter:
// never, outside Linux.
func Supported() (bool, string) {
	return false, "seccomp is Linux only, this is " + runtime.GOOS
}
