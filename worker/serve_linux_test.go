package worker

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCloseExecFrom(t *testing.T) {
	// Two descriptors without close-on-exec, as a supervisor could leak.
	var fds [2]int
	for i := range fds {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	below, above := min(fds[0], fds[1]), max(fds[0], fds[1])
	if err := closeExecFrom(above); err != nil {
		t.Fatal(err)
	}
	flags := func(fd int) int {
		f, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			t.Fatalf("fd %d: %v", fd, err)
		}
		return f
	}
	if flags(above)&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd %d: close-on-exec not set", above)
	}
	if flags(below)&unix.FD_CLOEXEC != 0 {
		t.Errorf("fd %d below the range: close-on-exec set", below)
	}
}

// TestFileCallsStayOutOfProc: a path on a proc file system, however it is
// reached (directly, or through a link planted to it), opens EACCES: the
// worker would read /proc as the owner of /proc/1 (its memory map), which
// the program itself is refused.
func TestFileCallsStayOutOfProc(t *testing.T) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	dir := t.TempDir()
	if err := os.Symlink("/proc/self", dir+"/p"); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"proc", "proc/self/maps", "proc/1/status", dir[1:] + "/p/maps"} {
		if fd, err := openInRoot(root, rel, unix.O_RDONLY, 0); err != unix.EACCES {
			if err == nil {
				unix.Close(fd)
			}
			t.Errorf("open %s in the root: %v; want EACCES", rel, err)
		}
	}
	fd, err := openInRoot(root, "etc/hostname", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open etc/hostname: %v", err)
	}
	unix.Close(fd)
}

// TestRemoveTreeCuts: a chain of 300 directories (a file in each) goes
// with two cuts at 128 levels, leaving nothing behind; allowed one cut, the
// remove stops with errTooDeep (EBUSY) rather than holding more than
// maxRemoveDepth descriptors.
func TestRemoveTreeCuts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: openat2 beneath, as the worker's file thread")
	}
	for _, tt := range []struct {
		maxCuts int
		want    error
	}{{2, nil}, {1, errTooDeep}} {
		dir := t.TempDir()
		p := filepath.Join(dir, "top")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
				t.Fatal(err)
			}
			next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd = next
			if f, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644); err != nil {
				t.Fatal(err)
			} else {
				unix.Close(f)
			}
		}
		unix.Close(fd)
		parent, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &treeRemover{maxCuts: tt.maxCuts}
		err = r.remove(parent, "top", 0)
		unix.Close(parent)
		if err != tt.want || (err == nil) != (r.cuts == 2) {
			t.Fatalf("remove with %d cuts allowed: %v after %d cuts, want %v", tt.maxCuts, err, r.cuts, tt.want)
		}
		if _, err := os.Lstat(p); (err == nil) != (tt.want != nil) {
			t.Errorf("with %d cuts allowed the top is there: %v", tt.maxCuts, err == nil)
		}
	}
}
