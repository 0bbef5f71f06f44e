package supervisor

import (
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/supervisor/limits"
)

// hostCeilings lowers the ceilings that are rlimits of the program
// (file descriptors: RLIMIT_NOFILE; workspace bytes: RLIMIT_FSIZE) to the
// supervisor's own hard limits, saying so in the log: sandboxes inherit
// them, and no process in a sandbox may raise a hard limit (that takes
// CAP_SYS_RESOURCE in the host's user namespace), so a request above
// them would end INTERNAL (setrlimit: operation not permitted) after its
// sandbox had started, instead of INVALID_ARGUMENT naming the field.
// Defaults above the lowered ceilings make New fail.
func hostCeilings(c limits.Set, log hclog.Logger) limits.Set {
	if hard, ok := hardRlimit(syscall.RLIMIT_NOFILE); ok && int64(c.FileDescriptors) > hard {
		log.Warn("file descriptor ceiling lowered to the supervisor's hard RLIMIT_NOFILE", "ceiling", c.FileDescriptors, "rlimit", hard)
		c.FileDescriptors = int32(hard)
	}
	if hard, ok := hardRlimit(syscall.RLIMIT_FSIZE); ok && c.WorkspaceBytes > hard {
		log.Warn("workspace ceiling lowered to the supervisor's hard RLIMIT_FSIZE", "ceiling", c.WorkspaceBytes, "rlimit", hard)
		c.WorkspaceBytes = hard
	}
	return c
}

// hardRlimit returns the process's hard limit of resource; ok is false
// when it is unlimited or cannot be read.
func hardRlimit(resource int) (int64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(resource, &r); err != nil || r.Max == ^uint64(0) || r.Max > 1<<62 {
		return 0, false
	}
	return int64(r.Max), true
}
