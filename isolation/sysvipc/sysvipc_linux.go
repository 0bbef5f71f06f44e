package sysvipc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Apply writes l into the IPC namespace of a process and reads every value
// back. nsFD is a pidfd of that process (Linux 5.8+: it names the process
// even once its pid is reused) or an open /proc/PID/ns/ipc; it must stay
// open during the call. It needs CAP_SYS_ADMIN over that namespace's user
// namespace and its own (host root).
//
// It works on a thread of its own, locked to its goroutine: setns(2)
// into the namespace (its /proc/sys/kernel/shm*, msg* and sem are then
// that namespace's), the writes, and setns back to the thread's own IPC
// namespace. Each file is written by its owner as the kernel reports it:
// host root up to Linux 6.8, which may write the sysctls of any IPC
// namespace; from 6.9 the root of the namespace's user namespace, the
// only one the kernel lets write them there (ipc/ipc_sysctl.c,
// ipc_permissions: any other uid gets the files' "other" bits, read
// only), whose effective uid the thread takes for the writes alone (a
// raw setresuid, which changes only the calling thread, and back to 0).
// A thread that could not return to its namespace or to euid 0 is never
// unlocked, so the Go runtime ends it with the goroutine.
//
// Errors: ErrNotSet (wrapped) when a value reads back other than written;
// *os.SyscallError for setns and setresuid; *os.PathError for the files.
// On error the namespace may hold some of l and must not serve programs.
func Apply(nsFD int, l Limits) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean, err := apply(nsFD, l)
		if clean {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// apply is Apply on the calling locked thread; clean reports whether the
// thread is back in its own IPC namespace with its own credentials.
func apply(nsFD int, l Limits) (clean bool, err error) {
	self, err := os.Open("/proc/thread-self/ns/ipc")
	if err != nil {
		return true, fmt.Errorf("sysvipc: %w", err)
	}
	defer self.Close()
	if err := unix.Setns(nsFD, unix.CLONE_NEWIPC); err != nil {
		return true, os.NewSyscallError("sysvipc: setns ipc", err)
	}
	clean, err = writeAll(l)
	if !clean {
		return false, err
	}
	if e := unix.Setns(int(self.Fd()), unix.CLONE_NEWIPC); e != nil {
		return false, errors.Join(err, os.NewSyscallError("sysvipc: setns back to the own ipc namespace", e))
	}
	return true, err
}

// writeAll writes and reads back l's sysctls in the calling thread's IPC
// namespace as their owner; clean reports that the thread's effective
// uid is (again) 0.
func writeAll(l Limits) (clean bool, err error) {
	// Names are looked up from an open /proc/sys/kernel, in the thread's
	// IPC namespace at each openat: each lookup of a whole /proc/sys path
	// costs about 20 µs.
	const dir = "/proc/sys/kernel"
	kdir, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, &os.PathError{Op: "sysvipc: open", Path: dir, Err: err}
	}
	defer unix.Close(kdir)
	var st unix.Stat_t
	if err := unix.Fstatat(kdir, "shmmax", &st, 0); err != nil {
		return true, &os.PathError{Op: "sysvipc: stat", Path: dir + "/shmmax", Err: err}
	}
	if st.Uid != 0 {
		if err := setEUID(int(st.Uid)); err != nil {
			return true, err
		}
		defer func() {
			if e := setEUID(0); e != nil {
				clean, err = false, errors.Join(err, e)
			}
		}()
	}
	for _, s := range l.sysctls() {
		if err := writeSysctl(kdir, s.name, s.value); err != nil {
			return true, err
		}
	}
	return true, nil
}

// setEUID sets the calling thread's effective uid (and only its: Go's
// wrappers change every thread of the process). From 0 to another uid it
// clears the thread's effective capabilities; back to 0 it restores them
// from the permitted set, which the real and saved uid 0 keep.
func setEUID(uid int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		return os.NewSyscallError(fmt.Sprintf("sysvipc: setresuid(-1, %d, -1)", uid), e)
	}
	return nil
}

// writeSysctl writes value to the sysctl file name below kdir (an open
// /proc/sys/kernel) and reads it back through the same descriptor.
func writeSysctl(kdir int, name, value string) error {
	p := "/proc/sys/kernel/" + name
	fd, err := unix.Openat(kdir, name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "sysvipc: open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(value)); err != nil {
		return &os.PathError{Op: "sysvipc: write", Path: p, Err: err}
	}
	var buf [128]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil {
		return &os.PathError{Op: "sysvipc: read back", Path: p, Err: err}
	}
	if got := strings.TrimSpace(string(buf[:n])); got != value {
		return fmt.Errorf("sysvipc: %s is %q after writing %q: %w", p, got, value, ErrNotSet)
	}
	return nil
}
