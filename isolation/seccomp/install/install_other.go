//go:build !linux

package install

import (
	"fmt"
	"runtime"
)

// Filter installs a seccomp filter; seccomp exists only on Linux, so here
// it returns an error wrapping ErrNotSupported.
func Filter(prog []Instruction) error {
	return fmt.Errorf("load seccomp filter on %s: %w", runtime.GOOS, ErrNotSupported)
}
