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
)

// TestLock: a second supervisor with the same cgroup parent, uid
// window or state directory is refused, naming the first one's pid; other
// resources, or the same ones after release, are free.
func TestLock(t *testing.T) {
	lockDir, state, other := t.TempDir(), t.TempDir(), t.TempDir()
	cg := cgroup.Config{Parent: "/execfarm-locktest"}
	release, err := Lock(cg, 1<<30, state, lockDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cg    cgroup.Config
		uid   uint32
		state string
		what  string
	}{
		{"same cgroup parent", cg, 2 << 30, other, "cgroup parent"},
		{"same uid window", cgroup.Config{Parent: "/x"}, 1 << 30, other, "uid window"},
		{"same state dir", cgroup.Config{Parent: "/x"}, 2 << 30, state, "state directory"},
	} {
		_, err := Lock(tc.cg, tc.uid, tc.state, lockDir)
		if !errors.Is(err, ErrShared) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
			t.Errorf("%s: Lock = %v, want ErrShared naming the %s and pid %d", tc.name, err, tc.what, os.Getpid())
		}
	}
	r2, err := Lock(cgroup.Config{Parent: "/x"}, 2<<30, other, lockDir)
	if err != nil {
		t.Fatalf("other resources: %v", err)
	}
	r2()
	release()
	r3, err := Lock(cg, 1<<30, state, lockDir)
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
		if release, err := Lock(cgroup.Config{}, 1<<30, state, dir); err == nil {
			release()
			t.Errorf("Lock with lock directory %s succeeded, want refused", dir)
		}
	}
}
