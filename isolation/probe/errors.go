package probe

import "errors"

var (
	// ErrHostCannotIsolate is wrapped by Report.Missing when a required
	// layer is missing and the operator did not allow running without it.
	ErrHostCannotIsolate = errors.New("probe: host cannot isolate")
	// ErrUnknownLayer is wrapped when --allow-degraded names no layer.
	ErrUnknownLayer = errors.New("probe: unknown isolation layer")
	// ErrNotDegradable is wrapped when --allow-degraded names a layer the
	// supervisor cannot run without.
	ErrNotDegradable = errors.New("probe: isolation layer cannot be degraded")
)
