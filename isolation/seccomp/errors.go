package seccomp

import "errors"

var (
	// ErrNotSupported is returned on an OS or architecture the filter is not
	// written for, and by Load when the kernel lacks seccomp filter mode.
	ErrNotSupported = errors.New("seccomp: not supported on this platform")

	// ErrPolicy means the policy in policy.go does not assemble: an unknown
	// syscall name, a duplicate, or a program over the kernel's size limit.
	ErrPolicy = errors.New("seccomp: invalid policy")

	// ErrThreadSync is returned by Load when the kernel could not apply the
	// filter to every thread (SECCOMP_FILTER_FLAG_TSYNC): a thread already
	// runs under a filter that is not an ancestor of the caller's.
	ErrThreadSync = errors.New("seccomp: cannot synchronise filter across threads")
)
