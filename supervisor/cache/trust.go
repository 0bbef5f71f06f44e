package cache

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkDir returns an error wrapping ErrUnsafeDir unless dir is a directory
// (not a symlink) owned by the effective uid and writable by no one else,
// and every ancestor is owned by root or that uid and, when others may
// write to it, sticky (as /tmp is): otherwise someone else could plant a
// script in it, or swap it for a directory of their own. Ancestors are
// followed through symlinks (/var/run → /run), the directory itself is not.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check cache directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (a symlink is refused)", ErrUnsafeDir, dir)
	}
	euid := uint32(os.Geteuid())
	if uid, ok := owner(fi); ok && uid != euid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this process's uid %d", ErrUnsafeDir, dir, uid, euid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o; chmod go-w)", ErrUnsafeDir, dir, fi.Mode().Perm())
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check cache directory: %w", err)
		}
		if uid, ok := owner(fi); ok && uid != 0 && uid != euid {
			return fmt.Errorf("%w: its parent %s is owned by uid %d", ErrUnsafeDir, p, uid)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%w: its parent %s is writable by group or others and not sticky (mode %04o)", ErrUnsafeDir, p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// trusted returns nil when fi (from lstat) is a script file this process's
// uid wrote: a regular file owned by the effective uid, writable by no one
// else (Save writes mode 0600). Anything else in the directory is ignored:
// a file planted by another user, one others may rewrite, a symlink.
func trusted(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("writable by group or others")
	}
	if uid, ok := owner(fi); ok && uid != uint32(os.Geteuid()) {
		return fmt.Errorf("owned by uid %d, not %d", uid, os.Geteuid())
	}
	return nil
}
