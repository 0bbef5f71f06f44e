//go:build linux

package forkserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Who owns a sandbox's user namespace, and why it matters.
//
// The kernel counts some resources per user rather than per cgroup:
// inotify instances and watches, queued signals (RLIMIT_SIGPENDING), POSIX
// message queue bytes (RLIMIT_MSGQUEUE), processes (RLIMIT_NPROC), SysV
// shm locked with SHM_LOCK (RLIMIT_MEMLOCK), user namespaces. Since Linux
// 5.14 these are ucounts (kernel/ucount.c), charged at every level of the
// user namespace tree: at the sandbox's own level to the uid inside, and
// at each ancestor level to the owner of the namespace below it, the
// effective uid of the process that created it. A fork server running as
// host root that created every sandbox's namespace made host root the
// owner of them all: every sandbox's signals, watches and queues were
// charged to root's counters in the initial namespace, where one sandbox
// could exhaust them for host root (systemd, kubelet) and for every other
// sandbox.
//
// So the thread that forks a child into a new user namespace takes, for
// the clone only, the effective uid and gid that the new namespace's root
// maps to (the sandbox's own host ids, unique per live sandbox): the
// namespace is then owned by them, and what the sandbox uses is charged to
// its own identity, bounded per sandbox by the host's per-user limits and
// by the rlimits the worker sets. Credentials are per thread; the change
// is made with raw setresuid/setresgid on the fork server's one forking
// thread (Go's wrappers change every thread), with SECBIT_NO_SETUID_FIXUP
// so that the thread keeps its capabilities, which writing the child's id
// maps needs (CAP_SETUID, CAP_SETGID over the parent namespace), and
// which cgroup placement by CLONE_INTO_CGROUP checks against the caller.
// The real and saved ids stay 0, which lets the thread return to euid 0.
// The child leaves with the kernel's fresh credentials of a new user
// namespace (full capabilities there, default securebits) and becomes
// root inside at exec, as before.

// secbitNoSetuidFixup is SECBIT_NO_SETUID_FIXUP
// (include/uapi/linux/securebits.h): changing the effective or filesystem
// uid between 0 and non-zero leaves the capability sets alone.
const secbitNoSetuidFixup = 1 << 2

// errNoRootMapping refuses a new user namespace whose root maps to no host
// id: there would be no identity of the sandbox's own to own it.
var errNoRootMapping = errors.New("forkserver: a new user namespace must map uid and gid 0 to a host id that owns it")

// namespaceOwner returns the host uid and gid that are to own the user
// namespace the spawn creates, those its id 0 maps to, and false when the
// spawn creates no user namespace.
func namespaceOwner(sys *sysAttr) (uid, gid uint32, ok bool, err error) {
	if sys == nil || sys.Cloneflags&unix.CLONE_NEWUSER == 0 {
		return 0, 0, false, nil
	}
	u, uok := hostIDOfRoot(sys.UidMappings)
	g, gok := hostIDOfRoot(sys.GidMappings)
	if !uok || !gok {
		return 0, 0, false, errNoRootMapping
	}
	return u, g, true, nil
}

// hostIDOfRoot returns the host id that id 0 maps to in m.
func hostIDOfRoot(m []syscall.SysProcIDMap) (uint32, bool) {
	for _, e := range m {
		if e.ContainerID == 0 && e.Size > 0 && e.HostID >= 0 {
			return uint32(e.HostID), true
		}
	}
	return 0, false
}

// asOwner runs fork with the calling thread's effective uid and gid set
// to uid and gid and its capabilities kept, then restores them. The
// calling goroutine must be locked to its thread (the fork server's main
// thread is, for good). A restore that fails leaves the thread with
// credentials nobody chose: asOwner panics, the fork server dies, and its
// children with it (Pdeathsig); the supervisor starts another.
func asOwner(uid, gid uint32, fork func()) error {
	bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	if err != nil {
		return os.NewSyscallError("prctl PR_GET_SECUREBITS", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits|secbitNoSetuidFixup), 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl PR_SET_SECUREBITS", err)
	}
	defer mustRestore("prctl PR_SET_SECUREBITS", func() error {
		return unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0)
	})
	const keep = ^uintptr(0) // -1: leave this id unchanged
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
		return os.NewSyscallError("setresgid", e)
	}
	defer mustRestore("setresgid", func() error { return rawErr(unix.RawSyscall(unix.SYS_SETRESGID, keep, 0, keep)) })
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
		return os.NewSyscallError("setresuid", e)
	}
	defer mustRestore("setresuid", func() error { return rawErr(unix.RawSyscall(unix.SYS_SETRESUID, keep, 0, keep)) })
	fork()
	return nil
}

func rawErr(_, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

func mustRestore(op string, f func() error) {
	if err := f(); err != nil {
		panic(fmt.Sprintf("forkserver: restore the forking thread's credentials: %s: %v", op, err))
	}
}
