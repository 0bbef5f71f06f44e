package supervisor

import (
	"fmt"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/supervisor/limits"
)

// CeilingNote is a ceiling lowered to the supervisor's hard rlimit.
type CeilingNote struct {
	Message        string // "file descriptor ceiling lowered to ..."
	Ceiling, Limit int64  // the ceiling asked and the hard rlimit
}

func (n CeilingNote) String() string {
	return fmt.Sprintf("%s: ceiling=%d rlimit=%d", n.Message, n.Ceiling, n.Limit)
}

// HostCeilingNotes says which of the ceilings c this process's hard
// rlimits would lower (hostCeilings), for `execfarm doctor` and a
// verbose client with an embedded supervisor.
func HostCeilingNotes(c limits.Set) []CeilingNote {
	_, notes := lowerCeilings(c)
	return notes
}

// hostCeilings lowers the ceilings that are rlimits of the program
// (file descriptors: RLIMIT_NOFILE; workspace bytes: RLIMIT_FSIZE) to the
// supervisor's own hard limits, saying so in the log at level info (a
// served supervisor's start shows it; an embedded one, whose logger
// says only warnings, does not print it on every run: doctor and
// `run -v` do): sandboxes inherit them, and no process in a sandbox may
// raise a hard limit (that takes CAP_SYS_RESOURCE in the host's user
// namespace), so a request above them would end INTERNAL (setrlimit:
// operation not permitted) after its sandbox had started, instead of
// INVALID_ARGUMENT naming the field. Defaults above the lowered ceilings
// make New fail.
func hostCeilings(c limits.Set, log hclog.Logger) limits.Set {
	c, notes := lowerCeilings(c)
	for _, n := range notes {
		log.Info(n.Message, "ceiling", n.Ceiling, "rlimit", n.Limit)
	}
	return c
}

func lowerCeilings(c limits.Set) (limits.Set, []CeilingNote) {
	var notes []CeilingNote
	if hard, ok := hardRlimit(syscall.RLIMIT_NOFILE); ok && int64(c.FileDescriptors) > hard {
		notes = append(notes, CeilingNote{"file descriptor ceiling lowered to the supervisor's hard RLIMIT_NOFILE", int64(c.FileDescriptors), hard})
		c.FileDescriptors = int32(hard)
	}
	if hard, ok := hardRlimit(syscall.RLIMIT_FSIZE); ok && c.WorkspaceBytes > hard {
		notes = append(notes, CeilingNote{"workspace ceiling lowered to the supervisor's hard RLIMIT_FSIZE", c.WorkspaceBytes, hard})
		c.WorkspaceBytes = hard
	}
	return c, notes
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
