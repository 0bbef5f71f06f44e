package isolation

import "errors"

// ErrNotSupported is wrapped by every isolation call on a platform or host
// that cannot provide the mechanism. Callers test it with errors.Is.
var ErrNotSupported = errors.New("isolation: not supported on this platform")

// NotSupported returns a sentinel error with the text msg that wraps
// ErrNotSupported: a sub-package's own ErrNotSupported, which names its
// mechanism ("landlock: not supported") and still satisfies
// errors.Is(err, isolation.ErrNotSupported). Call it once, in a package
// variable.
func NotSupported(msg string) error { return &notSupported{msg} }

type notSupported struct{ msg string }

func (e *notSupported) Error() string { return e.msg }
func (e *notSupported) Unwrap() error { return ErrNotSupported }
