package execution

import (
	"errors"
	"fmt"

	"github.com/execfarm/execfarm/supervisor/cache"
)

// ErrShuttingDown is returned by Submit once Shutdown has begun.
var ErrShuttingDown = errors.New("execution: supervisor is shutting down")

// ErrSandboxGone is what a Placement's Acquire wraps when the sandbox it
// holds for runs has ended (a session sandbox deleted or expired): the
// run then ends CANCELLED, as the sandbox's end cancels its execution,
// not FAILED.
var ErrSandboxGone = errors.New("execution: the sandbox has ended")

// JobBytesError is returned by Submit when admitting a job would take the
// bytes of the jobs queued or running past Config.MaxJobBytes. A job is
// always admitted when none is held, so any single request can run.
type JobBytesError struct {
	// Size is the refused job's size, Held what is held, Limit the bound;
	// bytes.
	Size, Held, Limit int64
}

func (e *JobBytesError) Error() string {
	return fmt.Sprintf("execution: queued requests hold %d bytes; %d more would pass the bound of %d", e.Held, e.Size, e.Limit)
}

// CachedError is a cached script a request names that cannot be run. It
// wraps cache.ErrNotFound (no such script, or the script cache is
// disabled), a *cache.AmbiguousError (cache.ErrAmbiguous), or the cache's
// own failure.
type CachedError struct {
	// Name is the name the request gave.
	Name string
	// Err is the cache's error.
	Err error
}

func (e *CachedError) Error() string {
	switch {
	case errors.Is(e.Err, errCacheDisabled):
		return fmt.Sprintf("cached script %q not found: the script cache is disabled", e.Name)
	case errors.Is(e.Err, cache.ErrNotFound):
		return fmt.Sprintf("cached script %q not found", e.Name)
	}
	return e.Err.Error()
}

// Unwrap returns the cache's error.
func (e *CachedError) Unwrap() error { return e.Err }

// errCacheDisabled is a CachedError's Err when the server has no cache.
var errCacheDisabled = fmt.Errorf("execution: the script cache is disabled: %w", cache.ErrNotFound)
