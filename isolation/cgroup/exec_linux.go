package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"
)

// Exec is the cgroup of one exec of a session sandbox: a child of the
// payload cgroup (Manager.NewPayload), in the pids hierarchy on v1 and the
// unified one on v2. It holds the exec's runtime process and everything
// that process starts, daemons that double-fork and setsid included, so
// that Kill ends exactly the exec's processes: not the worker, not the
// other execs. Limits stay on the sandbox and payload cgroups above it,
// which bound all execs together. On v1 with cpuacct in a hierarchy of its
// own, the exec has a second cgroup there, a child of the sandbox's, that
// holds the same processes: CPU counts what they and their descendants
// used (CPU-time limits and usage are the exec's, not the sandbox's).
type Exec struct {
	dir string
	// cpuDir is the exec's cgroup in the cpuacct hierarchy on v1 (dir
	// itself when pids and cpuacct share a hierarchy); "" on v2.
	cpuDir string
	// byThread: the worker's forking thread joins the cgroup for each fork
	// (v1), so it is counted in pids.peak and may be listed in
	// cgroup.procs while it forks.
	byThread bool
}

// NewExec creates the payload's child cgroup name (one path element, not
// PayloadName's) and returns it with the files through which the
// sandbox's worker places the exec's processes, opened for writing,
// O_CLOEXEC, by this process (the kernel checks a write to them against
// the opener's credentials, Linux 5.16+): with byThread (cgroup v1) the
// tasks file, to which the worker's forking thread writes "0" before it
// forks (the process is born there, Manager.PayloadTasks says why), else
// cgroup.procs, to which it writes the held process's pid.
//
// On v1 with cpuacct mounted apart from pids, the exec also gets the
// cgroup name below the sandbox's cgroup in the cpuacct hierarchy, and
// files holds two more: that cgroup's tasks (byThread) or cgroup.procs,
// written as the first, and with byThread the sandbox's own cpuacct tasks
// file, to which the forking thread returns after the fork, as it
// returns to the payload through Manager.PayloadTasks. Otherwise files
// holds one. The caller closes them.
//
// On v2 the payload enables the pids controller for its children first,
// so that each exec has its own pids.peak; a session sandbox's payload
// holds no process of its own, as v2 requires of a cgroup that does.
// Errors: no payload, a bad name, or the kernel's.
func (m *Manager) NewExec(name string, byThread bool) (_ *Exec, files []*os.File, err error) {
	d := m.payloadDir.Load()
	if d == nil {
		return nil, nil, errors.New("cgroup: no payload cgroup (NewPayload first)")
	}
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || name == PayloadName {
		return nil, nil, fmt.Errorf("%w: exec cgroup %q", ErrInvalidName, name)
	}
	if byThread && m.mode != V1 {
		return nil, nil, fmt.Errorf("%w: per-thread placement needs cgroup v1", ErrNotSupported)
	}
	if m.mode == V2 {
		// Without it the exec has no pids.peak of its own; the pids limit
		// of the payload holds either way.
		_ = writeExisting(filepath.Join(*d, "cgroup.subtree_control"), "+pids")
	}
	e := &Exec{dir: filepath.Join(*d, name), byThread: byThread}
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			files = nil
			_ = e.Remove()
		}
	}()
	if err := m.mkdirExec(e.dir); err != nil {
		return nil, nil, err
	}
	file := "cgroup.procs"
	if byThread {
		file = "tasks"
	}
	f, err := openWrite(filepath.Join(e.dir, file))
	if err != nil {
		return nil, nil, err
	}
	files = append(files, f)
	if m.mode != V1 {
		return e, files, nil
	}
	e.cpuDir = e.dir
	if cpu := m.dirs[string(cgroup1.Cpuacct)]; cpu != "" && cpu != m.dirs[string(cgroup1.Pids)] {
		e.cpuDir = filepath.Join(cpu, name)
		if err := m.mkdirExec(e.cpuDir); err != nil {
			return nil, nil, err
		}
		f, err := openWrite(filepath.Join(e.cpuDir, file))
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
		if byThread {
			f, err := openWrite(filepath.Join(cpu, "tasks"))
			if err != nil {
				return nil, nil, err
			}
			files = append(files, f)
		}
	}
	return e, files, nil
}

// mkdirExec creates one of an exec's cgroups.
func (m *Manager) mkdirExec(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create exec cgroup: %w", err)
	}
	if m.afterMkdir != nil {
		if err := m.afterMkdir(dir); err != nil {
			_ = unix.Rmdir(dir)
			return err
		}
	}
	return nil
}

// openWrite opens an interface file for writing, O_CLOEXEC.
func openWrite(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// CPU returns the CPU time, user and system in µs, that the exec's
// processes have used so far, those that ended included (the kernel
// charges a task's time to the cgroup it runs in, as it runs): cpu.stat
// of its cgroup on v2, its cpuacct cgroup on v1 (as Manager.Usage reads
// them). On v1 the forking thread's share of each fork (microseconds)
// is counted too.
func (e *Exec) CPU() (userMicros, systemMicros int64, err error) {
	if e.cpuDir == "" {
		cpu, err := readKeyed(filepath.Join(e.dir, "cpu.stat"))
		if err != nil {
			return 0, 0, fmt.Errorf("read CPU time of %s: %w", e.dir, err)
		}
		return cpu["user_usec"], cpu["system_usec"], nil
	}
	if userMicros, systemMicros, err = cpuV1(e.cpuDir); err != nil {
		return 0, 0, fmt.Errorf("read CPU time of %s: %w", e.cpuDir, err)
	}
	return userMicros, systemMicros, nil
}

// Path returns the exec cgroup's directory.
func (e *Exec) Path() string { return e.dir }

// Kill SIGKILLs every process in the exec's cgroup but skip (the worker's
// pid, which cgroup v1 lists while its forking thread sits there for a
// fork; 0 = none) and waits, bounded, until the cgroup holds none. v2
// writes cgroup.kill (Linux 5.14+), which also catches processes forked
// meanwhile. Otherwise (v1, older v2) each round lists the cgroup, opens a
// pidfd of every pid, lists it again and signals through the pidfds of the
// pids still listed: a pidfd opened before a listing that still shows its
// pid names the process listed, so a pid that was freed and reused by a
// process outside the cgroup is never signalled (no freezer is needed,
// and the rest of the sandbox keeps running). Errors wrap ErrKillTimeout
// when processes remain after the deadline.
func (e *Exec) Kill(skip int) error {
	deadline := time.Now().Add(killTimeout)
	killFile := filepath.Join(e.dir, "cgroup.kill")
	useKillFile := !e.byThread && exists(killFile)
	if useKillFile {
		if err := writeExisting(killFile, "1"); err != nil {
			return fmt.Errorf("kill exec cgroup %s: %w", e.dir, err)
		}
	}
	// A killed process leaves cgroup.procs within microseconds: look
	// again soon, then every pollInterval.
	pause := pollInterval / 8
	for {
		pids, err := e.procs(skip)
		if err != nil {
			return fmt.Errorf("kill exec cgroup %s: %w", e.dir, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill exec cgroup %s: %w: pids %v", e.dir, ErrKillTimeout, pids)
		}
		if !useKillFile {
			if err := e.signalListed(pids, skip); err != nil {
				return fmt.Errorf("kill exec cgroup %s: %w", e.dir, err)
			}
		}
		time.Sleep(pause)
		pause = min(2*pause, pollInterval)
	}
}

// signalListed SIGKILLs, through pidfds, the pids that a listing after the
// pidfds were opened still shows.
func (e *Exec) signalListed(pids []int, skip int) error {
	pidfds := make(map[int]int, len(pids))
	defer func() {
		for _, fd := range pidfds {
			unix.Close(fd)
		}
	}()
	for _, p := range pids {
		if fd, err := unix.PidfdOpen(p, 0); err == nil {
			pidfds[p] = fd
		}
	}
	again, err := e.procs(skip)
	if err != nil {
		return err
	}
	for _, p := range again {
		if fd, ok := pidfds[p]; ok {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
	}
	return nil
}

// procs lists the exec cgroup's processes, skip left out. A cgroup
// removed meanwhile (ENOENT, or ENODEV while its removal is under way:
// Remove succeeds only on an empty cgroup) holds none.
func (e *Exec) procs(skip int) ([]int, error) {
	pids, err := readProcsTree(e.dir)
	if errors.Is(err, unix.ENODEV) || errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pids, func(p int) bool { return p == skip }), nil
}

// Populated reports whether a process other than skip is in the exec's
// cgroup.
func (e *Exec) Populated(skip int) (bool, error) {
	pids, err := e.procs(skip)
	return len(pids) > 0, err
}

// PidsPeak returns the most tasks the exec's cgroup held at once
// (pids.peak; the worker's forking thread, there for each fork on v1, left
// out). ok is false when the kernel keeps no peak there (pids.peak is
// Linux 6.1+; on v2 it needs the pids controller enabled for the payload's
// children).
func (e *Exec) PidsPeak() (peak int64, ok bool) {
	v, err := readSingle(filepath.Join(e.dir, "pids.peak"))
	if err != nil {
		return 0, false
	}
	if e.byThread {
		v--
	}
	return max(0, v), true
}

// Remove removes the exec's cgroups. It fails (wrapping unix.EBUSY)
// while a process is in them: a daemon the exec left running keeps them
// until it ends or Manager.Delete removes the sandbox's whole tree. A
// missing cgroup is no error.
func (e *Exec) Remove() error {
	if err := removeExecDir(e.dir); err != nil {
		return err
	}
	if e.cpuDir != "" && e.cpuDir != e.dir {
		return removeExecDir(e.cpuDir)
	}
	return nil
}

func removeExecDir(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !isCgroupFS(dir) {
		// A fake tree in a test: plain files in a plain directory.
		return removeTree(dir)
	}
	return &os.PathError{Op: "rmdir", Path: dir, Err: err}
}
