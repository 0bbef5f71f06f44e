package execution

import (
	"errors"
	"syscall"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
)

func TestClassify(t *testing.T) {
	l := limits.Default()
	l.CPUTimeMs = 500
	exit := func(code, sig int32) *workerv1.Exit { return &workerv1.Exit{ExitCode: code, Signal: sig} }
	tests := []struct {
		name    string
		stop    registry.Reason
		exit    *workerv1.Exit
		runErr  error
		oom     int64
		outside bool // the OOM kill was for a limit not the sandbox's (memory.events oom 0)
		state   registry.State
		reason  registry.Reason
		code    int
		signal  int
		errText string
		success bool
	}{
		{name: "exit 0", exit: exit(0, 0), state: registry.StateCompleted, reason: registry.ReasonExited, success: true},
		{name: "exit 3", exit: exit(3, 0), state: registry.StateFailed, reason: registry.ReasonExited, code: 3, errText: "exited with code 3"},
		{name: "timeout wins over exit", stop: registry.ReasonTimeout, exit: exit(0, 0), state: registry.StateTimeout, reason: registry.ReasonTimeout,
			code: -1, signal: int(syscall.SIGKILL), errText: "Script execution timed out"},
		{name: "cancel", stop: registry.ReasonCancelled, runErr: errors.New("ctx"), state: registry.StateCancelled, reason: registry.ReasonCancelled,
			code: -1, signal: int(syscall.SIGKILL), errText: "Execution was cancelled"},
		{name: "cpu time stop", stop: registry.ReasonCPUTime, state: registry.StateFailed, reason: registry.ReasonCPUTime,
			code: -1, signal: int(syscall.SIGKILL), errText: "killed: CPU time limit of 500 ms exceeded"},
		{name: "stop wins over OOM", stop: registry.ReasonTimeout, oom: 1, state: registry.StateTimeout, reason: registry.ReasonTimeout,
			code: -1, signal: int(syscall.SIGKILL), errText: "Script execution timed out"},
		{name: "OOM wins over SIGKILL", exit: exit(-1, int32(syscall.SIGKILL)), oom: 1, state: registry.StateFailed, reason: registry.ReasonMemory,
			code: -1, signal: int(syscall.SIGKILL), errText: "killed: memory limit of 536870912 bytes exceeded (OOM kill)"},
		{name: "OOM with the worker lost", runErr: errors.New("eof"), oom: 2, state: registry.StateFailed, reason: registry.ReasonMemory,
			errText: "killed: memory limit of 536870912 bytes exceeded (OOM kill)"},
		{name: "OOM kill for an ancestor's limit is not the sandbox's", exit: exit(-1, int32(syscall.SIGKILL)), oom: 1, outside: true,
			state: registry.StateFailed, reason: registry.ReasonInternal, code: -1, signal: int(syscall.SIGKILL),
			errText: "killed by the kernel's OOM killer: the node's memory ran out outside this sandbox (its own limit of 536870912 bytes was not reached; peak 0 bytes)"},
		{name: "worker lost", runErr: errors.New("eof"), state: registry.StateFailed, reason: registry.ReasonInternal, errText: "worker lost: eof"},
		{name: "no exit, no error", state: registry.StateFailed, reason: registry.ReasonInternal, errText: "worker lost"},
		{name: "start error", exit: &workerv1.Exit{StartError: "exec: no such file"}, state: registry.StateFailed, reason: registry.ReasonInternal,
			errText: "start program: exec: no such file"},
		{name: "start error ENOENT (a runtime binary missing)", exit: &workerv1.Exit{StartError: "fork/exec /usr/bin/python3: no such file or directory", StartErrno: int32(syscall.ENOENT)},
			state: registry.StateFailed, reason: registry.ReasonInternal, errText: "start program: fork/exec /usr/bin/python3: no such file or directory"},
		{name: "start error EAGAIN is the process limit", exit: &workerv1.Exit{StartError: "start /bin/sh: resource temporarily unavailable", StartErrno: int32(syscall.EAGAIN)},
			state: registry.StateFailed, reason: registry.ReasonPids,
			errText: "start program: start /bin/sh: resource temporarily unavailable (the sandbox's process limit is reached)"},
		{name: "start error EACCES is the caller's directory", exit: &workerv1.Exit{StartError: "start /bin/sh: permission denied", StartErrno: int32(syscall.EACCES)},
			state: registry.StateFailed, reason: registry.ReasonExited, code: 126, errText: "start program: start /bin/sh: permission denied"},
		{name: "start error ENOENT at the working directory is the caller's", exit: &workerv1.Exit{StartError: "working directory /workspace/d: no such file or directory", StartErrno: int32(syscall.ENOENT), StartDir: true},
			state: registry.StateFailed, reason: registry.ReasonExited, code: 126, errText: "start program: working directory /workspace/d: no such file or directory"},
		{name: "signal", exit: exit(-1, int32(syscall.SIGSEGV)), state: registry.StateFailed, reason: registry.ReasonSignal,
			code: -1, signal: int(syscall.SIGSEGV), errText: "killed by signal SIGSEGV"},
		{name: "unnamed signal", exit: exit(-1, 40), state: registry.StateFailed, reason: registry.ReasonSignal,
			code: -1, signal: 40, errText: "killed by signal 40"},
		{name: "SIGXCPU is the CPU-time limit", exit: exit(-1, int32(syscall.SIGXCPU)), state: registry.StateFailed, reason: registry.ReasonCPUTime,
			code: -1, signal: int(syscall.SIGXCPU), errText: "killed: CPU time limit of 500 ms exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := cgroup.Usage{OOMKills: tt.oom, LimitOOMsRead: true}
			if !tt.outside {
				u.LimitOOMs = tt.oom
			}
			got := classify(tt.stop, tt.exit, tt.runErr, u, l)
			if got.State != tt.state || got.Reason != tt.reason || got.ExitCode != tt.code || got.Signal != tt.signal ||
				got.Error != tt.errText || got.Success != tt.success {
				t.Fatalf("classify = %+v\nwant state %v reason %v code %d signal %d error %q success %v",
					got, tt.state, tt.reason, tt.code, tt.signal, tt.errText, tt.success)
			}
		})
	}
}

func TestSince(t *testing.T) {
	base := cgroup.Usage{CPUUserMicros: 100, CPUSystemMicros: 50, OOMKills: 1, LimitOOMs: 1, PeakMemoryBytes: 7}
	u := cgroup.Usage{CPUUserMicros: 300, CPUSystemMicros: 40, OOMKills: 1, LimitOOMs: 1, PeakMemoryBytes: 9, PidsPeak: 3}
	got := since(u, base)
	want := cgroup.Usage{CPUUserMicros: 200, CPUSystemMicros: 0, OOMKills: 0, PeakMemoryBytes: 9, PidsPeak: 3}
	if got != want {
		t.Fatalf("since = %+v, want %+v", got, want)
	}
}
