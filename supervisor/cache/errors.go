package cache

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrNotFound is returned by Find when no cached script has the name, and
	// for names that can never be a cached script (empty, holding a path
	// separator, "..", or a NUL byte).
	ErrNotFound = errors.New("cache: script not found")
	// ErrAmbiguous is returned by Find when the name is not exact and is part
	// of several cached names; the error is an *AmbiguousError naming them.
	ErrAmbiguous = errors.New("cache: name matches several scripts")
	// ErrTooLarge is returned by Save for code longer than MaxScriptBytes and
	// by Find for a stored file larger than that limit plus its header.
	ErrTooLarge = errors.New("cache: script too large")
	// ErrInvalidDir is returned by Open for an empty directory name.
	ErrInvalidDir = errors.New("cache: invalid cache directory")
	// ErrUnsafeDir is returned by Open for a cache directory that someone
	// other than this process's uid could write to, replace or own.
	ErrUnsafeDir = errors.New("cache: unsafe cache directory")
	// ErrInvalidFilter is returned by List for a malformed glob pattern.
	ErrInvalidFilter = errors.New("cache: invalid filter")
	// ErrCollision is returned by Save when the file name it must use is
	// taken by a different script with the same time and 12-digit hash prefix.
	ErrCollision = errors.New("cache: script name taken by different content")
)

// AmbiguousError is returned by Find when a partial name matches several
// cached scripts. It unwraps to ErrAmbiguous.
type AmbiguousError struct {
	// Name is the name that was looked up.
	Name string
	// Matches are the matching script names, newest first.
	Matches []string
}

// Error names at most five of the matches.
func (e *AmbiguousError) Error() string {
	const shown = 5
	list := strings.Join(e.Matches[:min(len(e.Matches), shown)], ", ")
	if len(e.Matches) > shown {
		list += fmt.Sprintf(" and %d more", len(e.Matches)-shown)
	}
	return "cache: name " + quote(e.Name) + " matches several scripts: " + list
}

// Unwrap returns ErrAmbiguous.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// quote quotes a caller-supplied name for an error message, shortened.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
