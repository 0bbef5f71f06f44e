package execution

import "errors"

// ErrShuttingDown is returned by Submit once Shutdown has begun.
var ErrShuttingDown = errors.New("execution: supervisor is shutting down")
