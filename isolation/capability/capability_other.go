//go:build !linux

package capability

import (
	"fmt"
	"runtime"
)

// Restrict restricts the process's capabilities; Linux only, so here it
// returns an error wrapping ErrNotSupported.
func Restrict(keep Set) error {
	return fmt.Errorf("restrict capabilities on %s: %w", runtime.GOOS, ErrNotSupported)
}

// Current returns the calling thread's capability sets; Linux only.
func Current() (State, error) {
	return State{}, fmt.Errorf("read capabilities on %s: %w", runtime.GOOS, ErrNotSupported)
}

// Threads returns every thread's capability sets; Linux only.
func Threads() (map[int]State, error) {
	return nil, fmt.Errorf("read capabilities on %s: %w", runtime.GOOS, ErrNotSupported)
}
