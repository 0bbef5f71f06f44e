package host

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCleanupStateDirKeepsMountedDirectory checks the guard: a sandbox
// directory below which the mount table still lists a mount is not
// removed (removing it would delete the mounted file system's files).
// The table is fake, so nothing is unmounted; detach of a path that is no
// mount point fails with EINVAL, which counts as "already gone".
func TestCleanupStateDirKeepsMountedDirectory(t *testing.T) {
	state := t.TempDir()
	sb := filepath.Join(state, "sb")
	kept := leftoverSandbox(t, sb, "sb-00000000000000aa")
	gone := leftoverSandbox(t, sb, "sb-00000000000000bb")
	mi := filepath.Join(state, "mountinfo")
	line := "40 22 0:50 / " + filepath.Join(kept, "root") + " rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(mi, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := cleanupStateDir(state, mi)
	if removed != 1 || err == nil {
		t.Fatalf("cleanupStateDir = %d, %v; want 1 and an error naming the mounted directory", removed, err)
	}
	if _, err := os.Stat(filepath.Join(kept, "root", "file")); err != nil {
		t.Fatalf("the directory with a mount below it was emptied: %v", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the unmounted leftover %s is still there: %v", gone, err)
	}
}

// TestCleanupStateDirUnmounts mounts a tmpfs on a leftover sandbox's root
// mountpoint, as root, and checks that CleanupStateDir detaches it and
// removes the directory.
func TestCleanupStateDirUnmounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	state := t.TempDir()
	sb := filepath.Join(state, "sb")
	dir := leftoverSandbox(t, sb, "sb-00000000000000cc")
	root := filepath.Join(dir, "root")
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m"); err != nil {
		unix.Unmount(root, unix.MNT_DETACH)
		t.Fatalf("mount a second tmpfs on top: %v", err)
	}
	t.Cleanup(func() {
		unix.Unmount(root, unix.MNT_DETACH)
		unix.Unmount(root, unix.MNT_DETACH)
	})
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(root, "sub"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a nested tmpfs: %v", err)
	}
	if m, err := mountsBelow("/proc/self/mountinfo", sb); err != nil || len(m) != 3 {
		t.Fatalf("mount table below %s: %q, %v; want 3 mounts", sb, m, err)
	}
	removed, err := CleanupStateDir(state)
	if err != nil || removed != 1 {
		t.Fatalf("CleanupStateDir = %d, %v; want 1, nil", removed, err)
	}
	if m, err := mountsBelow("/proc/self/mountinfo", sb); err != nil || len(m) != 0 {
		t.Fatalf("mounts left below %s: %q, %v", sb, m, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
}
