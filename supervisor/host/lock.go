package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// LockDir is where Lock keeps the host-wide lock files:
// /run/lock/execfarm when the host has /run/lock (a tmpfs), else
// execfarm-locks in the temporary directory. Lock creates it, owned
// by the caller and not writable by others, and Lock refuses one that is a
// symbolic link or someone else's: the parents are world-writable.
func LockDir() string {
	if fi, err := os.Stat("/run/lock"); err == nil && fi.IsDir() {
		return "/run/lock/execfarm"
	}
	return filepath.Join(os.TempDir(), "execfarm-locks")
}

// Resources are what one supervisor holds for its life and no other
// supervisor on the host may share: two sharing a cgroup parent or a state
// directory would clean up (kill) each other's sandboxes at start, two
// whose uid windows overlap could give two sandboxes one host uid, and two
// sharing a script cache would clear each other's scripts.
type Resources struct {
	// Cgroup holds the cgroup parent; "" = cgroup.DefaultParent.
	Cgroup cgroup.Config
	// UIDBase is the first host uid of the window, UIDRanges its number
	// of ranges of probe.DefaultUIDRangeSize ids; UIDRanges 0 = 1.
	UIDBase   uint32
	UIDRanges int
	// StateDir is the state directory, created if missing.
	StateDir string
	// ScriptsCacheDir is the script cache directory, created (0700) if
	// missing; "" = none.
	ScriptsCacheDir string
}

// Lock takes, for the life of a supervisor, exclusive locks on r: flocks
// on its cgroup parent (a file in lockDir), its state directory and its
// script cache (a file in each), and a lock of its whole uid window
// (LockUIDWindow). release drops them; the kernel drops them too when the
// process dies, so a crashed supervisor never blocks the next. Each lock
// file holds the pid of its holder. Errors: ErrShared (wrapped), naming
// the resource and the other supervisor's pid (for an overlapping uid
// window, its window too); failures to create or lock a file.
func Lock(r Resources, lockDir string) (release func(), err error) {
	parent := r.Cgroup.Parent
	if parent == "" {
		parent = cgroup.DefaultParent
	}
	if err := ownDir(lockDir); err != nil {
		return nil, fmt.Errorf("host: lock: %w", err)
	}
	if err := sandbox.MakeStateDir(r.StateDir); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	locks := []struct{ what, path string }{
		{"cgroup parent " + parent, filepath.Join(lockDir, "execfarm-cgroup"+strings.ReplaceAll(parent, "/", "_")+".lock")},
		{"state directory " + r.StateDir, filepath.Join(r.StateDir, ".execfarm.lock")},
	}
	if r.ScriptsCacheDir != "" {
		if err := os.MkdirAll(r.ScriptsCacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("host: script cache directory: %w", err)
		}
		locks = append(locks, struct{ what, path string }{"script cache directory " + r.ScriptsCacheDir, filepath.Join(r.ScriptsCacheDir, ".execfarm.lock")})
	}
	var held []func()
	release = func() {
		for _, h := range held {
			h()
		}
	}
	for _, l := range locks {
		f, err := lockFile(l.path)
		if err != nil {
			release()
			if errors.Is(err, errLocked) {
				return nil, fmt.Errorf("%w: the %s is %v; give this one its own --cgroup-parent, --uid-base, --state-dir and --scripts-cache-dir", ErrShared, l.what, err)
			}
			return nil, fmt.Errorf("host: lock %s: %w", l.what, err)
		}
		held = append(held, func() { f.Close() }) // closing drops the lock
	}
	uids, err := LockUIDWindow(r.UIDBase, r.UIDRanges, lockDir)
	if err != nil {
		release()
		return nil, err
	}
	held = append(held, uids)
	return release, nil
}

// LockUIDWindow locks the uid window of ranges ranges of
// probe.DefaultUIDRangeSize ids from base, whole, for the caller's life
// (ranges 0 = 1): no other supervisor can lock a window that shares one
// uid with it. The lock is a byte-range lock of the window's uids in one
// file of lockDir (an open file description lock: it conflicts within a
// process too, and the kernel drops it when the process dies); the
// holder's pid is in a file named by its window's first uid. Errors:
// ErrShared (wrapped) naming this window, the other supervisor's window
// and its pid; failures to create or lock the files.
func LockUIDWindow(base uint32, ranges int, lockDir string) (release func(), err error) {
	if ranges <= 0 {
		ranges = 1
	}
	size := uint64(ranges) * uint64(probe.DefaultUIDRangeSize)
	window := fmt.Sprintf("uid window %d-%d", base, uint64(base)+size-1)
	if err := ownDir(lockDir); err != nil {
		return nil, fmt.Errorf("host: lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(lockDir, "execfarm-uids.lock"), os.O_RDWR|os.O_CREATE|oNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host: lock %s: %w", window, err)
	}
	if err := lockRange(f, uint64(base), size); err != nil {
		f.Close()
		var c *rangeConflict
		if errors.As(err, &c) {
			b, _ := os.ReadFile(filepath.Join(lockDir, pidFileOf(uint32(c.start))))
			return nil, fmt.Errorf("%w: the %s overlaps uid window %d-%d of another supervisor (pid %s); give this one its own --uid-base",
				ErrShared, window, c.start, c.start+c.len-1, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("host: lock %s: %w", window, err)
	}
	// The holder's pid, for the message of the next one that overlaps.
	pidFile, err := lockFile(filepath.Join(lockDir, pidFileOf(base)))
	if err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: the %s is %v; give this one its own --uid-base", ErrShared, window, err)
		}
		return nil, fmt.Errorf("host: lock %s: %w", window, err)
	}
	return func() {
		pidFile.Close()
		f.Close()
	}, nil
}

// pidFileOf names the file holding the pid of the supervisor whose uid
// window starts at base.
func pidFileOf(base uint32) string {
	return "execfarm-uid-" + strconv.FormatUint(uint64(base), 10) + ".lock"
}

// rangeConflict is a byte range another open file description holds.
type rangeConflict struct{ start, len uint64 }

func (c *rangeConflict) Error() string {
	return fmt.Sprintf("bytes %d+%d are locked", c.start, c.len)
}
