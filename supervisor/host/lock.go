package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/execfarm/execfarm/isolation/cgroup"
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

// Lock takes, for the life of a supervisor, exclusive locks (flock) on
// its cgroup parent and the first uid of its window (files in lockDir)
// and on its state directory (a file in it, created if missing). release
// drops them; the kernel drops them too when the process dies, so a
// crashed supervisor never blocks the next. Each lock file holds the pid
// of its holder. Errors: ErrShared (wrapped), naming the resource and
// the other supervisor's pid; failures to create or lock a file.
// Overlapping uid windows with different first uids are caught by the
// host probe's scan instead (live sandboxes only).
func Lock(cg cgroup.Config, uidBase uint32, stateDir, lockDir string) (release func(), err error) {
	parent := cg.Parent
	if parent == "" {
		parent = cgroup.DefaultParent
	}
	locks := []struct{ what, path string }{
		{"cgroup parent " + parent, filepath.Join(lockDir, "execfarm-cgroup"+strings.ReplaceAll(parent, "/", "_")+".lock")},
		{"uid window from " + strconv.FormatUint(uint64(uidBase), 10), filepath.Join(lockDir, "execfarm-uid-"+strconv.FormatUint(uint64(uidBase), 10)+".lock")},
		{"state directory " + stateDir, filepath.Join(stateDir, ".execfarm.lock")},
	}
	if err := ownDir(lockDir); err != nil {
		return nil, fmt.Errorf("host: lock: %w", err)
	}
	if err := sandbox.MakeStateDir(stateDir); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close() // drops the lock
		}
	}
	for _, l := range locks {
		f, err := lockFile(l.path)
		if err != nil {
			release()
			if errors.Is(err, errLocked) {
				return nil, fmt.Errorf("%w: the %s is %v; give this one its own --cgroup-parent, --uid-base and --state-dir", ErrShared, l.what, err)
			}
			return nil, fmt.Errorf("host: lock %s: %w", l.what, err)
		}
		held = append(held, f)
	}
	return release, nil
}
