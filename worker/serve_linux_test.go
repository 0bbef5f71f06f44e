package worker

import (
	"os"
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
