package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// The host's pseudo-terminals, and why the supervisor may raise
// kernel.pty.max.
//
// The kernel counts the pseudo-terminals of every devpts instance in one
// number, kernel.pty.nr, and refuses a new one (ENOSPC) once it reaches
// kernel.pty.max; instances other than the host's initial one (a
// container's, a sandbox's) may use only kernel.pty.max less
// kernel.pty.reserve, 4096 - 1024 by default. Each sandbox's devpts holds
// at most rootfs.PtysPerSandbox, so slots sandboxes hold at most
// slots × rootfs.PtysPerSandbox; the supervisor keeps the kernel's default
// share for the host's other instances on top of that, raising
// kernel.pty.max when it is lower, and never lowering it.

// defaultPtyShare is what the kernel's defaults leave to devpts instances
// other than the initial one (kernel.pty.max 4096, less kernel.pty.reserve
// 1024): the host's containers keep it whatever sandboxes hold.
const defaultPtyShare = 4096 - 1024

// PtyTable is what bounds the host's pseudo-terminals, as /proc shows
// them.
type PtyTable struct {
	// Max is kernel.pty.max; Reserve is kernel.pty.reserve, the part of
	// it only the initial devpts instance may use.
	Max, Reserve int64
}

// Required returns the kernel.pty.max under which slots sandboxes, each
// holding rootfs.PtysPerSandbox, leave the kernel's default share to the
// host's other devpts instances.
func (pt PtyTable) Required(slots int) int64 {
	return pt.Reserve + defaultPtyShare + int64(slots)*rootfs.PtysPerSandbox
}

func reservePtys(root string, slots int) (PtyTable, int64, error) {
	var pt PtyTable
	var err error
	if pt.Max, err = readInt(root, "proc/sys/kernel/pty/max", 0); err != nil {
		return pt, 0, err
	}
	if pt.Reserve, err = readInt(root, "proc/sys/kernel/pty/reserve", 0); err != nil {
		return pt, 0, err
	}
	want := pt.Required(slots)
	if pt.Max >= want {
		return pt, pt.Max, nil
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/pty/max"), []byte(strconv.FormatInt(want, 10)), 0); err != nil {
		return pt, pt.Max, fmt.Errorf("host: kernel.pty.max is %d, but %d sandboxes could hold %d pseudo-terminals each and leave the host's other devpts instances fewer than %d: set kernel.pty.max to %d or more (sysctl -w kernel.pty.max=%d): %w",
			pt.Max, slots, rootfs.PtysPerSandbox, defaultPtyShare, want, want, err)
	}
	return pt, want, nil
}
