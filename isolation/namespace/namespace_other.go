//go:build !linux

package namespace

import (
	"fmt"
	"syscall"

	"github.com/execfarm/execfarm/isolation"
)

// CloneFlags are the namespaces every worker is forked into (none off Linux).
const CloneFlags = 0

// SysProcAttr returns nil off Linux: namespaces do not exist there.
func SysProcAttr(r IDRange, cgroupFD int) *syscall.SysProcAttr { return nil }

// SetHostname is not supported off Linux.
func SetHostname(name string) error {
	return fmt.Errorf("sethostname: %w", isolation.ErrNotSupported)
}

// UnshareCgroup is not supported off Linux.
func UnshareCgroup() error { return fmt.Errorf("unshare cgroup: %w", isolation.ErrNotSupported) }

// LoopbackUp is not supported off Linux.
func LoopbackUp() error { return fmt.Errorf("loopback: %w", isolation.ErrNotSupported) }
