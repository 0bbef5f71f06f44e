package budget

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the budget package, wrapped by *Error.
var (
	// ErrExhausted: the memory asked for is not free now; it may be
	// once other sandboxes end.
	ErrExhausted = errors.New("budget: node memory budget exhausted")
	// ErrTooLarge: the memory asked for is more than the whole budget;
	// it never fits.
	ErrTooLarge = errors.New("budget: memory limit larger than the node memory budget")
)

// Error is a TryAcquire refused: what was asked, what is held, what of
// the rest is kept for the scheduler's queue head (Reserve), the total,
// in bytes. It wraps ErrTooLarge when Asked > Total, else ErrExhausted.
type Error struct {
	Asked, Held, Reserved, Total int64
}

func (e *Error) Error() string {
	if e.Asked > e.Total {
		return fmt.Sprintf("budget: a memory limit of %s is larger than the node's memory budget of %s (--memory-budget)",
			Format(e.Asked), Format(e.Total))
	}
	msg := fmt.Sprintf("budget: a memory limit of %s does not fit the node's memory budget of %s (--memory-budget): live sandboxes hold %s, %s is free",
		Format(e.Asked), Format(e.Total), Format(e.Held), Format(e.Total-e.Held))
	if e.Reserved > 0 {
		msg += fmt.Sprintf(", of which %s is kept for the execution first in the queue", Format(e.Reserved))
	}
	return msg
}

// Unwrap returns ErrTooLarge or ErrExhausted.
func (e *Error) Unwrap() error {
	if e.Asked > e.Total {
		return ErrTooLarge
	}
	return ErrExhausted
}

// Format writes n bytes in binary units as the serve flags take them:
// "512Mi", "1.5Gi", "100 bytes" (below 1 KiB).
func Format(n int64) string {
	units := []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	if n < 1<<10 && n > -1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, u := float64(n)/1024, 0
	for (v >= 1024 || v <= -1024) && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := fmt.Sprintf("%.2f", v)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	s = strings.TrimSuffix(s, ".")
	return s + units[u]
}
