package execution

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// classify turns how the run ended into a registry result. Precedence: an
// explicit stop (timeout, cancel) first, then an OOM kill (it wins over
// "killed by SIGKILL", DESIGN.md), then the worker's report. A timeout's
// and a cancel's error are ProDisco's texts (registry.TimedOutText,
// CancelledText); a non-zero exit's is "exited with code N", which
// errorText may replace with what the program said.
func classify(stop registry.Reason, exit *workerv1.Exit, runErr error, u cgroup.Usage, l limits.Set) registry.Result {
	// A stopped run was ended by SIGKILL to its whole sandbox (cgroup).
	killed := registry.Result{ExitCode: -1, Signal: int(syscall.SIGKILL)}
	switch stop {
	case registry.ReasonTimeout:
		killed.State, killed.Reason, killed.Error = registry.StateTimeout, registry.ReasonTimeout, registry.TimedOutText
		return killed
	case registry.ReasonCancelled:
		killed.State, killed.Reason, killed.Error = registry.StateCancelled, registry.ReasonCancelled, registry.CancelledText
		return killed
	case registry.ReasonCPUTime:
		killed.State, killed.Reason, killed.Error = registry.StateFailed, registry.ReasonCPUTime, fmt.Sprintf("killed: CPU time limit of %d ms exceeded", l.CPUTimeMs)
		return killed
	}
	if u.OOMKills > 0 {
		res := registry.Result{State: registry.StateFailed, Reason: registry.ReasonMemory,
			Error: fmt.Sprintf("killed: memory limit of %d bytes exceeded (OOM kill)", l.MemoryBytes)}
		if u.LimitOOMsRead && u.LimitOOMs == 0 {
			// The kernel killed it for a limit that is not its own (the
			// supervisor's cgroup's, the host's): execfarm's failure to
			// keep the node within its memory, not the program's.
			res.Reason = registry.ReasonInternal
			res.Error = fmt.Sprintf("killed by the kernel's OOM killer: the node's memory ran out outside this sandbox (its own limit of %d bytes was not reached; peak %d bytes)",
				l.MemoryBytes, u.PeakMemoryBytes)
		}
		if exit != nil {
			res.ExitCode, res.Signal = int(exit.GetExitCode()), int(exit.GetSignal())
		}
		return res
	}
	if runErr != nil || exit == nil {
		msg := "worker lost"
		if runErr != nil {
			msg = "worker lost: " + runErr.Error()
		}
		return registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal, Error: msg}
	}
	if se := exit.GetStartError(); se != "" {
		return startFailed(se, syscall.Errno(exit.GetStartErrno()), exit.GetStartDir())
	}
	if sig := syscall.Signal(exit.GetSignal()); sig != 0 {
		res := registry.Result{State: registry.StateFailed, Reason: registry.ReasonSignal, Signal: int(sig), ExitCode: -1,
			Error: "killed by signal " + strings.ToUpper(sigName(sig))}
		if sig == syscall.SIGXCPU {
			res.Reason = registry.ReasonCPUTime
			res.Error = fmt.Sprintf("killed: CPU time limit of %d ms exceeded", l.CPUTimeMs)
		}
		return res
	}
	code := int(exit.GetExitCode())
	if code == 0 {
		return registry.Result{State: registry.StateCompleted, Reason: registry.ReasonExited, Success: true}
	}
	return registry.Result{State: registry.StateFailed, Reason: registry.ReasonExited, ExitCode: code,
		Error: fmt.Sprintf("exited with code %d", code)}
}

// startFailed classifies a program that could not be started, by the
// errno of the failed call (workerv1.Exit.start_errno) and whether it was
// the chdir to the working directory (start_dir): EAGAIN from fork is the
// sandbox's process limit, full of what the caller's earlier execs left
// running (ReasonPids); a working directory the start could not enter
// (gone or replaced since the supervisor's check, by the sandbox's own
// processes, or one the sandbox user may not enter, such as /proc/1/root;
// EACCES, ENOTDIR and ELOOP also without start_dir) is the caller's, as a
// shell reports a command it cannot run: exit code 126, ReasonExited.
// Anything else, ENOENT at the program included (a missing runtime
// binary), is execfarm's failure (ReasonInternal).
func startFailed(msg string, errno syscall.Errno, atDir bool) registry.Result {
	res := registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal, Error: "start program: " + msg}
	switch {
	case errno == syscall.EAGAIN:
		res.Reason = registry.ReasonPids
		res.Error += " (the sandbox's process limit is reached)"
	case atDir, errno == syscall.EACCES, errno == syscall.ENOTDIR, errno == syscall.ELOOP:
		res.Reason, res.ExitCode = registry.ReasonExited, 126
	}
	return res
}

func sigName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "sigkill", syscall.SIGSEGV: "sigsegv", syscall.SIGSYS: "sigsys",
		syscall.SIGABRT: "sigabrt", syscall.SIGTERM: "sigterm", syscall.SIGXCPU: "sigxcpu",
		syscall.SIGXFSZ: "sigxfsz", syscall.SIGBUS: "sigbus", syscall.SIGPIPE: "sigpipe",
		syscall.SIGINT: "sigint", syscall.SIGHUP: "sighup",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("%d", int(s))
}
