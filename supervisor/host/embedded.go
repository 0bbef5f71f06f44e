package host

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
)

// EmbeddedPrefix begins the names of an embedded supervisor's cgroup
// parent and temporary directory; the pid of its process follows.
const EmbeddedPrefix = "execfarm-embedded-"

// EmbeddedRoot holds embedded supervisors' directories (socket and
// sandbox state): /tmp, not $TMPDIR, because sandbox workers pass through
// it by host path as unprivileged uids (a per-user TMPDIR is often 0700)
// and plugin socket paths must stay short.
const EmbeddedRoot = "/tmp"

// EmbeddedWindows is how many uid windows embedded supervisors choose
// from.
const EmbeddedWindows = 255

// EmbeddedUIDBase is the first host uid of an embedded supervisor's
// window of probe.DefaultUIDSlots ranges: window 1 + pid%EmbeddedWindows
// of [2^30, 2^31), so that concurrent embedded supervisors (two `execfarm
// run`s) rarely share a window and never share serve's default window 0.
// An embedded supervisor locks its window (LockUIDWindow) and, when it is
// taken, tries the window of pid+1, and so on.
func EmbeddedUIDBase(pid int) uint32 {
	const window = probe.DefaultUIDSlots * probe.DefaultUIDRangeSize
	return DefaultUIDBase + uint32(1+pid%EmbeddedWindows)*window
}

// LockEmbeddedWindow locks the first embedded uid window no other
// supervisor holds, from pid's (EmbeddedUIDBase(pid), then pid+1's, and
// so on through all EmbeddedWindows), in lockDir (LockUIDWindow), and
// returns its first uid and the release of its lock. Errors: a lock that
// fails for another reason than ErrShared, or every window taken
// (wrapping ErrShared).
func LockEmbeddedWindow(pid int, lockDir string) (base uint32, release func(), err error) {
	for i := range EmbeddedWindows {
		base = EmbeddedUIDBase(pid + i)
		release, err = LockUIDWindow(base, probe.DefaultUIDSlots, lockDir)
		if err == nil || !errors.Is(err, ErrShared) {
			return base, release, err
		}
	}
	return 0, nil, err
}

// RemoveStaleEmbedded removes what embedded supervisors of processes that
// are gone left behind (an `execfarm run` killed with SIGKILL runs no
// clean-up): their cgroup parents next to the one this process would use
// (in cg's hierarchy position; cg.Parent is ignored) and their temporary
// directories in EmbeddedRoot. A pid that is alive again, for another
// process, keeps its leftovers: nothing of a live process is ever
// removed. Best effort.
func RemoveStaleEmbedded(cg cgroup.Config) {
	alive := func(name string) bool {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, EmbeddedPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			return true // not ours to judge
		}
		err = syscall.Kill(pid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	cg.Parent = "/" + EmbeddedPrefix + strconv.Itoa(os.Getpid())
	if parents, err := cgroup.SiblingParents(cg, EmbeddedPrefix); err == nil {
		for _, p := range parents {
			if alive(path.Base(p)) {
				continue
			}
			stale := cg
			stale.Parent = p
			if _, err := cgroup.Cleanup(stale); err == nil {
				_ = cgroup.RemoveParent(stale)
			}
		}
	}
	if entries, err := os.ReadDir(EmbeddedRoot); err == nil {
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), EmbeddedPrefix) && !alive(e.Name()) {
				_ = os.RemoveAll(filepath.Join(EmbeddedRoot, e.Name()))
			}
		}
	}
}
