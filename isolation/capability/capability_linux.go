//go:build linux

package capability

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Restrict makes keep the permitted and effective set of every thread of
// the calling process and empties their inheritable, ambient and bounding
// sets, so that nothing the process executes later can regain a
// capability (capabilities(7), "Transformation of capabilities during
// execve"). The calling process must hold CAP_SETPCAP (namespace root
// does); keep must be a subset of what it holds.
//
// Each step runs on every OS thread at once (see the package doc), which
// costs one round trip to every thread per call: about 100 µs on a 2-core
// VM, one per capability still in the bounding set (all of them, 41 on
// this kernel, for a process with a full set: 4-8 ms). Restrict
// then reads every thread's sets back from /proc/self/task and returns an
// error wrapping ErrStillHeld if one holds more than asked. A failed step
// leaves the process partly restricted; the caller must not go on serving.
func Restrict(keep Set) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	// Ambient first, when the calling thread has any (threads inherit
	// the set of the thread that created them; verify checks them all):
	// the kernel clears it anyway when inheritable shrinks, but saying so
	// does not depend on that rule.
	if ambientHeld(last) {
		if err := allThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return os.NewSyscallError("prctl PR_CAP_AMBIENT_CLEAR_ALL", err)
		}
	}
	// The bounding set, while CAP_SETPCAP is still effective: only what
	// the calling thread still has (a process started with a small
	// bounding set, as workers are, pays a round trip per capability it
	// holds, not per capability the kernel knows). Threads inherit the set
	// of the thread that created them, so they hold the same; verify below
	// checks every thread and fails if one holds more.
	for c := 0; c <= last; c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && in == 0 {
			continue // not held; on a read error, drop it anyway
		}
		if err := allThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, os.NewSyscallError("prctl PR_CAPBSET_DROP", err))
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(keep), Permitted: uint32(keep)},
		{Effective: uint32(keep >> 32), Permitted: uint32(keep >> 32)},
	}
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return os.NewSyscallError("capset", e)
	}
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	return verify(keep)
}

// ambientHeld reports whether the calling thread's ambient set holds a
// capability up to last, or cannot be read.
func ambientHeld(last int) bool {
	for c := 0; c <= last; c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err != nil || in != 0 {
			return true
		}
	}
	return false
}

// allThreadsPrctl runs prctl(option, arg2, arg3, 0, 0) on every thread.
func allThreadsPrctl(option int, arg2, arg3 uintptr) error {
	if _, _, e := psx.Syscall6(unix.SYS_PRCTL, uintptr(option), arg2, arg3, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// verify checks every thread of the process against keep.
func verify(keep Set) error {
	states, err := Threads()
	if err != nil {
		return fmt.Errorf("verify capabilities: %w", err)
	}
	for tid, st := range states {
		if st.Bounding != 0 || st.Ambient != 0 || st.Inheritable != 0 ||
			st.Permitted&^keep != 0 || st.Effective&^keep != 0 {
			return fmt.Errorf("%w: thread %d: inh %s prm %s eff %s bnd %s amb %s, want prm and eff within %s",
				ErrStillHeld, tid, st.Inheritable, st.Permitted, st.Effective, st.Bounding, st.Ambient, keep)
		}
	}
	return nil
}

// Current returns the capability sets of the calling thread, read from
// /proc/thread-self/status.
func Current() (State, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return readStatus("/proc/thread-self/status")
}

// Threads returns the capability sets of every thread of the calling
// process, keyed by thread id, read from /proc/self/task/*/status. A
// thread that exits while it is read is left out.
func Threads() (map[int]State, error) {
	dirs, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	out := make(map[int]State, len(dirs))
	for _, d := range dirs {
		tid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st, err := readStatus(filepath.Join("/proc/self/task", d.Name(), "status"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[tid] = st
	}
	return out, nil
}

func readStatus(path string) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, fmt.Errorf("read capabilities: %w", err)
	}
	st, err := ParseStatus(bytes.NewReader(b))
	if err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// lastCap returns the highest capability number the kernel knows, from
// /proc/sys/kernel/cap_last_cap, or by asking PR_CAPBSET_READ when /proc
// does not say.
func lastCap() (int, error) {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && n >= 0 && n < 64 {
			return n, nil
		}
	}
	for c := 0; c < 64; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil {
			if c == 0 {
				return 0, os.NewSyscallError("prctl PR_CAPBSET_READ", err)
			}
			return c - 1, nil
		}
	}
	return 63, nil
}
