package transformer

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nobody is the uid and gid a helper of a root supervisor runs as.
const nobody = 65534

// dropPrivileges makes a helper of a root supervisor nobody, with no
// supplementary groups and so no capabilities, and sets no_new_privs: it
// parses code nobody has read, and needs nothing but its pipes. The
// syscall package's calls apply to every thread of the process.
func dropPrivileges() error {
	if os.Geteuid() == 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(nobody, nobody, nobody); err != nil {
			return fmt.Errorf("setresgid: %w", err)
		}
		if err := syscall.Setresuid(nobody, nobody, nobody); err != nil {
			return fmt.Errorf("setresuid: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return nil
}
