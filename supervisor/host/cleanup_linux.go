package host

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// detach lazily unmounts mp (umount2 MNT_DETACH). A mount point already
// gone with a detached parent (EINVAL, ENOENT) is not an error.
func detach(mp string) error {
	err := unix.Unmount(mp, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &os.PathError{Op: "umount2", Path: mp, Err: err}
}
