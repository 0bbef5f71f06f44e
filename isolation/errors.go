package isolation

import "errors"

// ErrNotSupported is wrapped by every isolation call on a platform or host
// that cannot provide the mechanism. Callers test it with errors.Is.
var ErrNotSupported = errors.New("isolation: not supported on this platform")
