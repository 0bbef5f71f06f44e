package seccomp

import (
	"errors"

	"github.com/execfarm/execfarm/isolation/seccomp/install"
)

var (
	// ErrNotSupported is returned on an OS or architecture the filter is not
	// written for, and by Load when the kernel lacks seccomp filter mode
	// (install.ErrNotSupported).
	ErrNotSupported = install.ErrNotSupported

	// ErrPolicy means the policy in policy.go does not assemble: an unknown
	// syscall name, a duplicate, or a program over the kernel's size limit.
	ErrPolicy = errors.New("seccomp: invalid policy")

	// ErrThreadSync is returned by Load when the kernel could not apply the
	// filter to every thread (SECCOMP_FILTER_FLAG_TSYNC): a thread already
	// runs under a filter that is not an ancestor of the caller's
	// (install.ErrThreadSync).
	ErrThreadSync = install.ErrThreadSync
)
