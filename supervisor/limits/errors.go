package limits

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every *FieldError: a limit out of range.
var ErrInvalid = errors.New("limits: invalid limit")

// FieldError names the request field whose limit is out of range and why.
// It wraps ErrInvalid.
type FieldError struct {
	// Field is the request field as the wire names it, with its message
	// path: "limits.max_memory_bytes", or "timeout_ms" for ProDisco's
	// top-level timeout.
	Field string
	// Value is the value asked for, in the field's unit.
	Value int64
	// Reason says what is wrong: "must not be negative", "above the
	// server's ceiling 600000"...
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid %s %d: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }
