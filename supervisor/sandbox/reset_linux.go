package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// Reset makes a sandbox that has served an execution ready for another
// (serve --sandbox-reuse), and returns only when all of this holds:
//
//   - every process of the sandbox but the worker is killed and reaped
//     (Worker.Reset), the prepared one included, except a kept goja
//     process (workerv1.RunRequest.keep) found alone beside the worker:
//     idle since its reply, it keeps serving the sandbox's executions,
//     each in a runtime of its own (package runtime/keep);
//   - /workspace, /tmp, /dev/shm and /dev/mqueue are empty (removed from
//     the host, through /proc/PID/root, once nothing runs inside), and
//     /workspace has its mode (0755) back, no user.* attributes or POSIX
//     ACLs, and the reset's time as its times;
//   - the System V message queues, semaphore sets and shared memory
//     segments of the sandbox's IPC namespace are removed;
//   - peak memory starts over (cgroup v1; see cgroup.Manager.ResetPeaks).
//
// What persists is listed in README ("Sandbox reuse"): the worker process,
// the namespaces, the cgroup and its page cache. On error the sandbox must
// be closed, not reused. quiet, when not nil, is called once no process
// of the execution can run any more (the worker's part done), before the
// clean-up of files, IPC objects and peaks: a result may be published
// then (see execution's Release).
func (s *Sandbox) Reset(ctx context.Context, quiet func()) error {
	if s.runner == nil || s.runner.proc == nil {
		return errors.New("sandbox: reset: no worker")
	}
	if _, err := s.worker.Reset(ctx, &workerv1.ResetRequest{}); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	if quiet != nil {
		quiet()
	}
	// The worker is not reaped before Close (runner.release), so its pid
	// cannot name another process here.
	pid := s.runner.proc.Pid
	root := fmt.Sprintf("/proc/%d/root", pid)
	for _, d := range rootfs.ScratchDirs {
		if err := emptyDir(filepath.Join(root, d)); err != nil {
			return fmt.Errorf("sandbox: reset: %w", err)
		}
	}
	ws := filepath.Join(root, rootfs.WorkspaceDir)
	if err := os.Chmod(ws, 0o755); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	if err := removeXattrs(ws); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	now := time.Now()
	if err := os.Chtimes(ws, now, now); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	if err := removeSysVIPC(pid); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	if err := s.cg.ResetPeaks(); err != nil {
		return fmt.Errorf("sandbox: reset: %w", err)
	}
	return nil
}

// emptyDir removes everything in dir (os.RemoveAll neither follows nor
// leaves symbolic links).
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// removeXattrs removes the extended attributes the sandbox user can set on
// path, which it owns: user.* (tmpfs keeps them since Linux 6.6) and the
// POSIX ACLs (system.posix_acl_access, system.posix_acl_default, which
// would also shape the next execution's new files).
func removeXattrs(path string) error {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return nil
	}
	if err != nil {
		return os.NewSyscallError("llistxattr "+path, err)
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "system.posix_acl_") {
			if err := unix.Lremovexattr(path, name); err != nil && !errors.Is(err, unix.ENODATA) {
				return os.NewSyscallError("lremovexattr "+path, err)
			}
		}
	}
	return nil
}

// removeSysVIPC removes every System V IPC object of the IPC namespace of
// process pid. It joins that namespace on a thread of its own, which then
// ends with the goroutine (never unlocked, so Go does not reuse a thread
// in another namespace).
func removeSysVIPC(pid int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		errc <- removeSysVIPCHere(pid)
	}()
	return <-errc
}

func removeSysVIPCHere(pid int) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/ipc", pid))
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWIPC); err != nil {
		return os.NewSyscallError("setns ipc", err)
	}
	// /proc/sysvipc lists the reading thread's IPC namespace.
	rm := map[string]func(id int) error{
		"shm": func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err },
		"msg": func(id int) error { return ipcRMID(unix.SYS_MSGCTL, id) },
		"sem": func(id int) error { return ipcRMID(unix.SYS_SEMCTL, id) },
	}
	var errs []error
	for kind, remove := range rm {
		ids, err := sysvIDs("/proc/sysvipc/" + kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range ids {
			if err := remove(id); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
				errs = append(errs, fmt.Errorf("remove %s %d: %w", kind, id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ipcRMID is msgctl or semctl (trap) with IPC_RMID.
func ipcRMID(trap uintptr, id int) error {
	var err error
	if trap == unix.SYS_SEMCTL {
		_, _, e := unix.Syscall6(trap, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
		if e != 0 {
			err = e
		}
	} else if _, _, e := unix.Syscall(trap, uintptr(id), unix.IPC_RMID, 0); e != 0 {
		err = e
	}
	return err
}

// sysvIDs reads the ids (second column) of a /proc/sysvipc table.
func sysvIDs(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []int
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if id, err := strconv.Atoi(fields[1]); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, sc.Err()
}
