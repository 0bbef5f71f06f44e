package profile

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown is wrapped by every *UnknownError.
var ErrUnknown = errors.New("profile: unknown sandbox profile")

// UnknownError is the error of a create that names a profile the server
// does not have. It wraps ErrUnknown.
type UnknownError struct {
	// Name is the profile asked for.
	Name string
	// Known are the server's profiles, sorted.
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown sandbox profile %q: this server has %s (serve --sandbox-profiles)", e.Name, strings.Join(e.Known, ", "))
}

// Unwrap returns ErrUnknown.
func (e *UnknownError) Unwrap() error { return ErrUnknown }
