//go:build linux

package landlock

import (
	"fmt"
	"os"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// versions are go-landlock's full configurations, index i = ABI i+1.
var versions = []ll.Config{ll.V1, ll.V2, ll.V3, ll.V4, ll.V5, ll.V6, ll.V7, ll.V8, ll.V9, ll.V10, ll.V11}

// deviceAccess is what Config.Devices grants, before it is narrowed to
// what the ABI handles.
const deviceAccess = llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSReadDir |
	llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// ABI returns the Landlock ABI version of the running kernel (1 for Linux
// 5.13, 6 for 6.12, ...), asked with landlock_create_ruleset(2) and
// LANDLOCK_CREATE_RULESET_VERSION. A kernel without Landlock (not built,
// or not in the lsm= list) returns 0 and an error wrapping
// ErrNotSupported.
func ABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case e == unix.ENOSYS || e == unix.EOPNOTSUPP:
		return 0, fmt.Errorf("%w: kernel says %v", ErrNotSupported, e)
	case e != 0:
		return 0, os.NewSyscallError("landlock_create_ruleset", e)
	}
	return int(v), nil
}

// Restrict confines every thread of the calling process, and every process
// it starts afterwards, to c, with every file-system access right the
// running kernel's ABI knows handled; on ABI 6+ it also scopes abstract
// unix sockets and signals unless c.NoScope. It sets no_new_privs. A
// domain cannot be left; a second Restrict stacks another one.
//
// A kernel without Landlock returns an error wrapping ErrNotSupported;
// any other failure (a missing path, a refused syscall) is returned as is
// and leaves the process unrestricted by this call.
func Restrict(c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	abi, err := ABI()
	if err != nil {
		return fmt.Errorf("restrict with landlock: %w", err)
	}
	full := versions[min(abi, len(versions))-1]
	cfg := ll.Config{HandledAccessFS: full.HandledAccessFS}
	if !c.NoScope {
		cfg.Scoped = full.Scoped
	}
	rw := ll.RWDirs(c.ReadWrite...)
	if abi >= 2 {
		// Moving files between directories of the workspace.
		rw = rw.WithRefer()
	}
	rules := []ll.Rule{ll.RODirs(c.ReadOnly...), rw}
	for _, d := range c.Devices {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("restrict with landlock: %w", err)
		}
		access := ll.AccessFSSet(deviceAccess) & cfg.HandledAccessFS
		if !fi.IsDir() {
			// Directory rights on a file make the kernel answer EINVAL.
			access &^= llsys.AccessFSReadDir
		}
		rules = append(rules, ll.PathAccess(access, d))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("restrict with landlock ABI %d: %w", abi, err)
	}
	return nil
}
