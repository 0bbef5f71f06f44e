//go:build unix

package host

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
)

// TestLock: a second supervisor with the same cgroup parent, an
// overlapping uid window, the same state directory or the same script
// cache is refused, naming the resource and the first one's pid; other
// resources, or the same ones after release, are free.
func TestLock(t *testing.T) {
	lockDir, state, cache, other := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	first := Resources{Cgroup: cgroup.Config{Parent: "/execfarm-locktest"}, UIDBase: 1 << 30, UIDRanges: 10, StateDir: state, ScriptsCacheDir: cache}
	release, err := Lock(first, lockDir)
	if err != nil {
		t.Fatal(err)
	}
	free := func() Resources {
		return Resources{Cgroup: cgroup.Config{Parent: "/x"}, UIDBase: 2 << 30, UIDRanges: 10, StateDir: filepath.Join(other, "state"), ScriptsCacheDir: filepath.Join(other, "cache")}
	}
	for _, tc := range []struct {
		name  string
		share func(*Resources)
		what  string
	}{
		{"same cgroup parent", func(r *Resources) { r.Cgroup = first.Cgroup }, "cgroup parent"},
		{"same uid window", func(r *Resources) { r.UIDBase = first.UIDBase }, "uid window 1073741824-1074397183"},
		{"a window 65536 above", func(r *Resources) { r.UIDBase = first.UIDBase + probe.DefaultUIDRangeSize }, "overlaps uid window 1073741824-1074397183"},
		{"a window ending in it", func(r *Resources) { r.UIDBase = first.UIDBase - 5*probe.DefaultUIDRangeSize }, "overlaps uid window 1073741824-1074397183"},
		{"a window around it", func(r *Resources) { r.UIDBase, r.UIDRanges = first.UIDBase-probe.DefaultUIDRangeSize, 100 }, "overlaps"},
		{"same state dir", func(r *Resources) { r.StateDir = state }, "state directory"},
		{"same script cache", func(r *Resources) { r.ScriptsCacheDir = cache }, "script cache directory"},
	} {
		r := free()
		tc.share(&r)
		_, err := Lock(r, lockDir)
		if !errors.Is(err, ErrShared) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("%s: Lock = %v, want ErrShared naming the %s and pid %d", tc.name, err, tc.what, os.Getpid())
		}
	}
	// Adjacent windows share no uid.
	adjacent := free()
	adjacent.UIDBase = first.UIDBase + 10*probe.DefaultUIDRangeSize
	r2, err := Lock(adjacent, lockDir)
	if err != nil {
		t.Fatalf("other resources, adjacent window: %v", err)
	}
	r2()
	release()
	r3, err := Lock(first, lockDir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	r3()
}

// TestLockRefusesAnUnsafeLockDir: the lock directory's parents are
// world-writable; a lock directory that is a symbolic link or writable by
// others is refused rather than used.
func TestLockRefusesAnUnsafeLockDir(t *testing.T) {
	base, state := t.TempDir(), t.TempDir()
	link := filepath.Join(base, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, open} {
		if release, err := Lock(Resources{UIDBase: 1 << 30, StateDir: state}, dir); err == nil {
			release()
			t.Errorf("Lock with lock directory %s succeeded, want refused", dir)
		}
	}
}
