// Package limits holds the resource limits of an execution: the wire's
// ResourceLimits resolved over the server's defaults and checked against
// its ceilings (Resolve), the defaults and ceilings themselves, and what a
// resolved Set means for a sandbox (Spec: cgroup limits and workspace size)
// and for a runtime process (Rlimits). The sandbox's tmpfs mounts fit its
// memory limit less a reserve for its processes (tmpfs.go): files alone
// fail with ENOSPC before they can fill the limit.
//
// Zero in a request field means "the server's default"; a negative value,
// a value above the ceiling, or one below the minimum a program needs to
// start is a *FieldError naming the request field, which wraps
// ErrInvalid (INVALID_ARGUMENT on the wire). The package is pure Go and
// safe for concurrent use: it holds no state.
package limits
