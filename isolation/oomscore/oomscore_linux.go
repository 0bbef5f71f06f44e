// Package oomscore sets the OOM killer's preference among a sandbox's
// processes (/proc/PID/oom_score_adj, -1000..1000; see proc(5)).
//
// A sandbox's worker is its init: when the OOM killer takes it, the
// sandbox ends, and a session sandbox loses its files and every process
// in it. By size alone the worker is an early victim: its resident set
// counts the pages of its 20 MB binary it touched (about 12 MiB of shared
// memory, mapped from the supervisor's sealed memfd), more than a shell
// or a small interpreter holds (red-team pass: forty sleeping python3
// processes in a 96 MiB session sandbox, or an exec filling socket
// buffers, ended the sandbox instead of the exec). So every runtime
// process starts at Max (the kernel then prefers it to any process of
// lower adjustment, whatever their sizes), and the worker keeps the fork
// server's adjustment, never below 0 (Floor).
//
// A runtime process cannot change its adjustment: Landlock lets it write
// no file under /proc. Without Landlock, a program that made itself
// dumpable could open its own and lower it, but only down to the minimum
// its last privileged writer set (oom_score_adj_min, inherited at fork):
// the fork server, root on the host, writes its own adjustment at start,
// which makes 0 the floor of every worker and runtime process when the
// supervisor's own was negative (a Kubernetes Guaranteed pod's -997
// would otherwise shield sandboxed code from the node's OOM killer). At
// 0 a program competes with the worker by size, as without this package,
// and only in its own sandbox.
package oomscore

import (
	"fmt"

	"golang.org/x/sys/unix"
	"os"
	"strconv"
	"strings"
)

// Max is the adjustment every runtime process starts with: the OOM
// killer's first choice.
const Max = 1000

// path is the calling process's adjustment.
const path = "/proc/self/oom_score_adj"

// Floor raises the calling process's adjustment to at least 0 and writes
// it back, which, for a writer with CAP_SYS_RESOURCE (the fork server),
// also makes it the floor that its children inherit. Errors: reading or
// writing /proc/self/oom_score_adj.
func Floor() error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("oomscore: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("oomscore: %s: %q: %w", path, b, err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(max(v, 0))), 0); err != nil {
		return fmt.Errorf("oomscore: %w", err)
	}
	return nil
}

// Forker sets the adjustment of the process that holds it around its
// forks, so that each child is born with Max while the process itself
// keeps its own: oom_score_adj is per process and copied at fork, and a
// child running a program of the host (a shell, python3, node) has no
// hook between fork and exec. While a fork is in flight (from Raise to
// Restore, a vfork and the child's exec) the parent is at Max too. Its
// descriptor is opened once (Open), before Landlock and the seccomp
// filter confine the process.
type Forker struct {
	f   *os.File
	own []byte // the adjustment Restore writes back
}

// Open opens the calling process's adjustment for Raise and Restore and
// reads what Restore writes back. Errors: opening or reading
// /proc/self/oom_score_adj.
func Open() (*Forker, error) {
	f, err := openOwn()
	if err != nil {
		return nil, fmt.Errorf("oomscore: %w", err)
	}
	b := make([]byte, 16)
	n, err := f.Read(b)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("oomscore: read %s: %w", path, err)
	}
	own := []byte(strings.TrimSpace(string(b[:n])))
	if _, err := strconv.Atoi(string(own)); err != nil {
		f.Close()
		return nil, fmt.Errorf("oomscore: %s: %q: %w", path, b[:n], err)
	}
	return &Forker{f: f, own: own}, nil
}

// Raise sets the adjustment to Max, for the children forked until
// Restore. Errors: the write's.
func (k *Forker) Raise() error { return k.write([]byte(strconv.Itoa(Max))) }

// Restore sets the adjustment back to what Open read. Errors: the write's.
func (k *Forker) Restore() error { return k.write(k.own) }

func (k *Forker) write(v []byte) error {
	if _, err := k.f.WriteAt(v, 0); err != nil {
		return fmt.Errorf("oomscore: write %s: %w", path, err)
	}
	return nil
}

// openOwn opens /proc/self/oom_score_adj for reading and writing. A
// process that exec'd a binary whose owner its user namespace does not
// map (the worker: the supervisor's sealed memfd, owned by host root) is
// not dumpable, and its /proc files then belong to that unmapped root:
// not even the process may open them. It is made dumpable for the open
// alone (PR_SET_DUMPABLE, which any process may set on itself) and then
// not dumpable again: the descriptor keeps the access, nothing else does.
func openOwn() (*os.File, error) {
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return nil, os.NewSyscallError("prctl PR_GET_DUMPABLE", err)
	}
	if d != 1 {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
			return nil, os.NewSyscallError("prctl PR_SET_DUMPABLE", err)
		}
		defer func() {
			if rerr := unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(d), 0, 0, 0); rerr != nil {
				panic(os.NewSyscallError("prctl PR_SET_DUMPABLE", rerr)) // never left dumpable
			}
		}()
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}
