package install

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Filter installs prog on every thread of the calling process, with
// SECCOMP_FILTER_FLAG_TSYNC, so that no Go runtime thread escapes it;
// every process forked afterwards inherits it. It cannot be removed.
//
// Installing a filter without CAP_SYS_ADMIN requires no_new_privs on the
// calling thread (Documentation/userspace-api/seccomp_filter.rst). Filter
// sets it when it is not already set, so that the filter also holds across
// set-uid executables; TSYNC then sets it on every other thread. Both steps
// run on one locked OS thread.
//
// Errors: ErrNotSupported if the kernel lacks seccomp filters,
// ErrThreadSync if a thread could not be synchronised, ErrMalformed for an
// empty prog, otherwise the *os.SyscallError of prctl or seccomp (EINVAL:
// the kernel refused the program).
func Filter(prog []Instruction) error {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return fmt.Errorf("load seccomp filter: %w: %d instructions", ErrMalformed, len(prog))
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("load seccomp filter: %w", os.NewSyscallError("prctl(PR_GET_NO_NEW_PRIVS)", err))
	}
	if nnp != 1 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("load seccomp filter: %w", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err))
		}
	}

	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	switch {
	case errno == unix.ENOSYS || errno == unix.EINVAL && ActionAvailable(unix.SECCOMP_RET_ALLOW) != nil:
		return fmt.Errorf("load seccomp filter: %w: %w", ErrNotSupported, os.NewSyscallError("seccomp", errno))
	case errno != 0:
		return fmt.Errorf("load seccomp filter: %w", os.NewSyscallError("seccomp", errno))
	case r != 0:
		// With TSYNC, a positive return is the id of a thread that could not
		// be synchronised; nothing was installed.
		return fmt.Errorf("load seccomp filter: thread %d: %w", r, ErrThreadSync)
	}
	return nil
}

// ActionAvailable asks the kernel whether it offers the seccomp return
// action (SECCOMP_GET_ACTION_AVAIL, the source of
// /proc/sys/kernel/seccomp/actions_avail). It returns nil, EOPNOTSUPP for
// an action the kernel lacks, or another errno (EINVAL: no filter mode).
// For SECCOMP_RET_ALLOW it tells an EINVAL from seccomp(SET_MODE_FILTER)
// caused by a kernel without CONFIG_SECCOMP_FILTER from one caused by a
// bad program.
func ActionAvailable(action uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return errno
	}
	return nil
}
