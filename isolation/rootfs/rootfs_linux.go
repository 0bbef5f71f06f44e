package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Setup builds the sandbox root described by cfg and pivots into it. On
// return the calling process's root is the new read-only root and its
// working directory is WorkspaceDir. Errors keep their errno
// (os.SyscallError, os.PathError) and name the step that failed.
func Setup(cfg Config) error {
	if cfg.Root == "" {
		return errors.New("rootfs: empty Root")
	}
	// Nothing we mount may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &os.PathError{Op: "make / rprivate", Path: "/", Err: err}
	}
	r := cfg.Root
	if err := mountTmpfs(r, "size=4m,nr_inodes=4096,mode=0755", unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	for _, p := range cfg.ReadOnly {
		if err := bindHostPath(r, p); err != nil {
			return err
		}
	}
	for name, content := range cfg.Files {
		if err := writeFile(r, name, content); err != nil {
			return err
		}
	}
	for _, p := range cfg.ReadOnlyFiles {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := bindFile(p, filepath.Join(r, p)); err != nil {
			return err
		}
	}
	for _, b := range cfg.Binds {
		if !filepath.IsAbs(b.Target) || filepath.Clean(b.Target) == "/" {
			return fmt.Errorf("rootfs: bind target %q must be an absolute path below /", b.Target)
		}
		dst := filepath.Join(r, filepath.Clean(b.Target))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := bindReadOnly(b.Source, dst, unix.MS_REC); err != nil {
			return err
		}
	}
	if cfg.GojaBinary != "" {
		if err := bindFile(cfg.GojaBinary, filepath.Join(r, GojaPath)); err != nil {
			return err
		}
	}
	if err := setupProc(r); err != nil {
		return err
	}
	if err := setupDev(r, orDefault(cfg.ShmBytes)); err != nil {
		return err
	}
	tmpBytes := orDefault(cfg.TmpBytes)
	if err := mountTmpfs(filepath.Join(r, "tmp"), fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", tmpBytes, TmpfsInodes(tmpBytes)), unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	ws := filepath.Join(r, WorkspaceDir)
	wsBytes := orDefault(cfg.WorkspaceBytes)
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755,uid=%d,gid=%d", wsBytes, TmpfsInodes(wsBytes), cfg.UID, cfg.GID)
	if err := mountTmpfs(ws, opts, unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	if err := pivot(r); err != nil {
		return err
	}
	// The root tmpfs itself becomes read-only; the tmpfs mounts below it
	// (/tmp, /dev/shm, the workspace) stay writable.
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return &os.PathError{Op: "remount / read-only", Path: "/", Err: err}
	}
	if err := os.Chdir(WorkspaceDir); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	return nil
}

func orDefault(n int64) int64 {
	if n <= 0 {
		return DefaultTmpfsBytes
	}
	return n
}

func mountTmpfs(dir, data string, flags uintptr) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, data); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return nil
}

// bindHostPath recreates host path p under root r: a symlink stays a
// symlink, a directory is bound recursively and made read-only.
func bindHostPath(r, p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	dst := filepath.Join(r, p)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	return bindReadOnly(p, dst, unix.MS_REC)
}

// bindFile binds one host file read-only onto dst, creating dst.
func bindFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	f.Close()
	return bindReadOnly(src, dst, 0)
}

// bindReadOnly binds src on dst and remounts the bind read-only, nosuid,
// nodev, keeping the flags the kernel locked on the source mount (a
// remount that drops a locked flag fails with EPERM in a user namespace).
func bindReadOnly(src, dst string, extra uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|extra, ""); err != nil {
		return &os.PathError{Op: "bind mount " + src, Path: dst, Err: err}
	}
	return remountReadOnly(dst, unix.MS_NOSUID|unix.MS_NODEV)
}

func remountReadOnly(dst string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return &os.PathError{Op: "statfs", Path: dst, Err: err}
	}
	locked := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_RELATIME | unix.MS_NODIRATIME)
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags|locked, ""); err != nil {
		return &os.PathError{Op: "remount read-only", Path: dst, Err: err}
	}
	return nil
}

func writeFile(r, name, content string) error {
	p := filepath.Join(r, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	return nil
}

// setupProc mounts a fresh procfs (it shows only the sandbox's pid
// namespace), hides sensitive entries and makes kernel knobs read-only.
func setupProc(r string) error {
	dir := filepath.Join(r, "proc")
	if err := os.MkdirAll(dir, 0o555); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return &os.PathError{Op: "mount proc", Path: dir, Err: err}
	}
	for _, p := range maskedPaths {
		dst := filepath.Join(r, p)
		fi, err := os.Stat(dst)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", dst, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,nr_inodes=1")
		} else {
			err = unix.Mount("/dev/null", dst, "", unix.MS_BIND, "")
		}
		if err != nil {
			return &os.PathError{Op: "mask", Path: p, Err: err}
		}
	}
	for _, p := range readOnlyPaths {
		dst := filepath.Join(r, p)
		if _, err := os.Stat(dst); err != nil {
			continue
		}
		if err := unix.Mount(dst, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return &os.PathError{Op: "bind", Path: p, Err: err}
		}
		if err := remountReadOnly(dst, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	return nil
}

// setupDev makes a minimal /dev: null, zero, full, random and urandom
// bound from the host, a private devpts instance of at most
// PtysPerSandbox pseudo-terminals, /dev/shm and the usual
// symlinks. Device nodes cannot be created in a user namespace, so they
// are bind mounts of the host's nodes.
func setupDev(r string, shmBytes int64) error {
	dev := filepath.Join(r, "dev")
	if err := mountTmpfs(dev, "size=64k,nr_inodes=64,mode=0755", unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, d := range devices {
		src := "/dev/" + d
		dst := filepath.Join(dev, d)
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		f.Close()
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return &os.PathError{Op: "bind device", Path: src, Err: err}
		}
	}
	pts := filepath.Join(dev, "pts")
	if err := os.MkdirAll(pts, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	opts := "newinstance,ptmxmode=0666,mode=0620,max=" + strconv.Itoa(PtysPerSandbox)
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, opts); err != nil {
		return &os.PathError{Op: "mount devpts", Path: pts, Err: err}
	}
	links := map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := mountTmpfs(shm, fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", shmBytes, TmpfsInodes(shmBytes)), unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
		return err
	}
	// The sandbox's POSIX message queues (its own IPC namespace), listed
	// as files, as in Docker: a reused sandbox's reset removes them here.
	mq := filepath.Join(dev, MqueueDir[len("/dev/"):])
	if err := os.MkdirAll(mq, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if err := unix.Mount("mqueue", mq, "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return &os.PathError{Op: "mount mqueue", Path: mq, Err: err}
	}
	return nil
}

// pivot makes r the root: pivot_root(".", ".") stacks the old root under
// the new one, and a lazy unmount detaches it (the runc technique; no
// directory for the old root is left in the sandbox).
func pivot(r string) error {
	if err := os.Chdir(r); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return os.NewSyscallError("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return os.NewSyscallError("umount old root", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	return nil
}
