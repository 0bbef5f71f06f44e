package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"
)

// NewPayload creates the sandbox's child cgroup PayloadName in the pids
// hierarchy, limits it to pidsMax tasks (pids.max), and returns its
// cgroup.procs opened for writing, O_CLOEXEC. The worker stays in the
// sandbox cgroup and moves every runtime process into the payload by
// writing the process's pid (in the worker's pid namespace) to that file
// before the process runs untrusted code. So a fork bomb exhausts the
// payload's pids, never the worker's (the worker's Go runtime aborts when it
// cannot start a thread). The file was opened by the supervisor, and the
// kernel checks a cgroup.procs write against the opener's credentials
// (Linux 5.16+), so the unprivileged worker may use it.
//
// On v2 the sandbox cgroup enables the pids controller for its children:
// it holds no process itself (the worker is in its leaf WorkerLeafName), as
// the kernel requires of a cgroup whose children are domain cgroups that
// processes migrate into (Documentation/admin-guide/cgroup-v2.rst, "No
// Internal Process Constraint"; a cgroup with processes and pids enabled
// would become a thread root, and the payload an invalid domain that
// refuses cgroup.procs writes with EOPNOTSUPP).
func (m *Manager) NewPayload(pidsMax int64) (*os.File, error) {
	if pidsMax <= 0 {
		return nil, fmt.Errorf("%w: payload pids.max %d", ErrInvalidLimits, pidsMax)
	}
	parent := m.dirs[string(cgroup1.Pids)]
	if m.mode == V2 {
		parent = m.dirs[unified]
		if err := writeExisting(filepath.Join(parent, "cgroup.subtree_control"), "+pids"); err != nil {
			return nil, fmt.Errorf("enable pids for the payload of %s: %w", parent, err)
		}
	}
	dir := filepath.Join(parent, PayloadName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create payload cgroup: %w", err)
	}
	if m.afterMkdir != nil {
		if err := m.afterMkdir(dir); err != nil {
			return nil, err
		}
	}
	if err := writeExisting(filepath.Join(dir, "pids.max"), strconv.FormatInt(pidsMax, 10)); err != nil {
		return nil, fmt.Errorf("set pids.max of %s: %w", dir, err)
	}
	m.payloadDir.Store(&dir)
	procs := filepath.Join(dir, "cgroup.procs")
	fd, err := unix.Open(procs, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", procs, &os.PathError{Op: "open", Path: procs, Err: err})
	}
	return os.NewFile(uintptr(fd), procs), nil
}

// PayloadTasks opens the payload cgroup's tasks file for writing (cgroup
// v1 only; NewPayload first). Writing "0" to it moves only the writing
// thread: a worker's forking thread joins the payload this way, and every
// process it forks afterwards is born in the payload, with no window
// outside it and no migration (which on v1 waits for an RCU grace period)
// per process. v2 keeps threads of a process in one cgroup: there it
// returns an error wrapping ErrNotSupported.
func (m *Manager) PayloadTasks() (*os.File, error) {
	if m.mode != V1 {
		return nil, fmt.Errorf("%w: per-thread payload placement needs cgroup v1", ErrNotSupported)
	}
	d := m.payloadDir.Load()
	if d == nil {
		return nil, errors.New("cgroup: no payload cgroup (NewPayload first)")
	}
	tasks := filepath.Join(*d, "tasks")
	fd, err := unix.Open(tasks, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: tasks, Err: err}
	}
	return os.NewFile(uintptr(fd), tasks), nil
}
