//go:build !linux

package landlock

import (
	"fmt"
	"runtime"
)

// ABI returns the kernel's Landlock ABI version; Landlock is Linux only, so
// here it returns 0 and an error wrapping ErrNotSupported.
func ABI() (int, error) {
	return 0, fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)
}

// Restrict confines the process with Landlock; Linux only.
func Restrict(c Config) error {
	return fmt.Errorf("restrict with landlock on %s: %w", runtime.GOOS, ErrNotSupported)
}
