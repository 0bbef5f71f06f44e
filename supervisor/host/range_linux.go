package host

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// oNoFollow refuses to open a lock file through a symbolic link.
const oNoFollow = unix.O_NOFOLLOW

// lockRange takes a write lock of bytes [start, start+n) of f as an open
// file description lock (F_OFD_SETLK: held by this open file, not by the
// process, so it conflicts within one process too; dropped when f is
// closed). A conflict is a *rangeConflict with the other lock's range.
func lockRange(f *os.File, start, n uint64) error {
	if start+n > math.MaxInt64 {
		return errors.New("range past the largest file offset")
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(start), Len: int64(n)}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
		return os.NewSyscallError("fcntl F_OFD_SETLK", err)
	}
	probe := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(start), Len: int64(n)}
	if gerr := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &probe); gerr != nil || probe.Type == unix.F_UNLCK {
		// Released meanwhile: report the conflict as it was.
		return &rangeConflict{start: start, len: n}
	}
	return &rangeConflict{start: uint64(probe.Start), len: uint64(probe.Len)}
}
