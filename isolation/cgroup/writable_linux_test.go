package cgroup

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParentWritable: a parent on a writable tree passes, and so does one
// not made yet under a writable ancestor; on a read-only mount (what a
// container gets for /sys/fs/cgroup unless it is privileged) both fail,
// even for root, naming the directory; nothing is created.
func TestParentWritable(t *testing.T) {
	cfg := fakeV2(t, kernelFiles())
	if err := ParentWritable(cfg); err != nil {
		t.Fatalf("writable parent: %v", err)
	}
	notYet := cfg
	notYet.Parent = "/execfarm/not-made/yet"
	if err := ParentWritable(notYet); err != nil {
		t.Fatalf("parent not made yet: %v", err)
	}
	if exists(filepath.Join(cfg.Root, "execfarm", "not-made")) {
		t.Fatal("ParentWritable created the parent")
	}

	requireRoot(t)
	dir := filepath.Join(cfg.Root, "execfarm")
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k"); err != nil {
		t.Fatalf("mount a read-only tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	for _, c := range []Config{cfg, notYet} {
		err := ParentWritable(c)
		if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s on a read-only mount: %v, want EROFS naming %s", c.Parent, err, dir)
		}
	}
}
