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
