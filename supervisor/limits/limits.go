package limits

import (
	"fmt"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Set is the resource limits of one execution, resolved from the request,
// the server's defaults and its ceilings.
type Set struct {
	// MemoryBytes is the sandbox's memory limit (cgroup, swap 0), bytes.
	MemoryBytes int64
	// CPUPercent is CPU bandwidth in percent of one core (100 = one core).
	CPUPercent int32
	// FileDescriptors is RLIMIT_NOFILE of the program.
	FileDescriptors int32
	// Processes is the sandbox's pids limit (processes and threads).
	Processes int32
	// OutputBytes is the output kept per stream, bytes.
	OutputBytes int64
	// TimeoutMs is the wall-clock timeout, milliseconds.
	TimeoutMs int64
	// CPUTimeMs is the CPU-time limit of the program, milliseconds; 0 = none.
	CPUTimeMs int64
	// WorkspaceBytes sizes the workspace tmpfs, bytes; it is also the
	// program's RLIMIT_FSIZE. Resolve keeps it within MaxWorkspaceBytes of
	// MemoryBytes (and /tmp and /dev/shm are ScratchBytes).
	WorkspaceBytes int64
}

// CPUTimeCheckInterval is how often a run checks its CPU-time limit: the
// cgroup counts CPU time but signals nothing, so it is read. The limit is
// thus exact to within one interval of the sandbox's CPUs.
const CPUTimeCheckInterval = 20 * time.Millisecond

// MinCPUTimeMs is the smallest CPU-time limit: it is enforced by reading
// the cgroup every CPUTimeCheckInterval, so a smaller one could not be
// exact.
const MinCPUTimeMs = 100

// MinCPUPercent is the smallest CPU bandwidth limit, in percent of one
// core: the worker's own start-up runs under the sandbox's CPU quota.
const MinCPUPercent = 10

// MinProcesses is the smallest max_processes the server accepts.
const MinProcesses = 8

// MinFileDescriptors is the smallest RLIMIT_NOFILE (max_file_descriptors)
// of an execution, whatever its runtime. The worker sets the program's
// rlimits on itself just before the fork (worker/server_linux.go: the
// child inherits them), so the limit must hold the worker's own
// descriptors (about 17 at rest: its gRPC connection, epoll, pipes) and
// those it opens to start the program (its stdio, program, console,
// ready and results pipes, and the exec-error pipe of the fork) before
// the program opens any: below it, the start failed with EMFILE, "start
// /usr/bin/node: too many open files", reported as execfarm's failure.
// Measured on cgroup v2 (the lowest that starts): shell and python 22,
// goja and node 26, and 28 in test mode; the minimum is twice that, for
// a worker that holds more (cgroup v1's event files) and a runtime that
// opens a few of its own. Session sandboxes need more still
// (sandbox.MinSessionFileDescriptors).
const MinFileDescriptors = 64

// Default returns the server defaults when no flag changes them.
func Default() Set {
	return Set{
		MemoryBytes: 512 << 20, CPUPercent: 100, FileDescriptors: 1024, Processes: 256,
		OutputBytes: 1 << 20, TimeoutMs: 30_000, CPUTimeMs: 0, WorkspaceBytes: 64 << 20,
	}
}

// DefaultCeilings returns the largest values a request may ask for when
// no flag changes them.
func DefaultCeilings() Set {
	return Set{
		MemoryBytes: 8 << 30, CPUPercent: 800, FileDescriptors: 65536, Processes: 4096,
		OutputBytes: 64 << 20, TimeoutMs: 600_000, CPUTimeMs: 600_000, WorkspaceBytes: 2 << 30,
	}
}

// Resolve applies the request's limits over the defaults and checks them
// against the ceilings. Zero in a request field means "default";
// negative values and values above the ceiling are a *FieldError naming
// the field, and so are request limits below what a program needs to
// start (minimums). The request's top-level timeout_ms (ProDisco's)
// applies unless limits.timeout_ms is set. The workspace, /tmp and
// /dev/shm must fit the memory limit with room left for the sandbox's
// processes (MaxReserveBytes): a default workspace is lowered to fit
// (MaxWorkspaceBytes), one the request names that does not fit is a
// *FieldError on limits.workspace_bytes naming limits.max_memory_bytes.
func Resolve(req *sandboxv1.ResourceLimits, timeoutMs *int32, def, ceil Set) (Set, error) {
	out, err := overlay(req, timeoutMs, def, ceil)
	if err != nil {
		return out, err
	}
	if req != nil {
		if err := out.checkMinimums(); err != nil {
			return out, err
		}
	}
	return out.fitTmpfs(req.GetWorkspaceBytes() != 0)
}

// overlay returns def with the request's non-zero fields, each checked
// against its ceiling.
func overlay(req *sandboxv1.ResourceLimits, timeoutMs *int32, def, ceil Set) (Set, error) {
	out := def
	pick := func(field string, v, ceiling int64, dst *int64) error {
		switch {
		case v < 0:
			return &FieldError{Field: field, Value: v, Reason: "must not be negative"}
		case v == 0:
			return nil
		case v > ceiling:
			return &FieldError{Field: field, Value: v, Reason: fmt.Sprintf("above the server's ceiling %d", ceiling)}
		}
		*dst = v
		return nil
	}
	if timeoutMs != nil {
		if *timeoutMs <= 0 {
			return out, &FieldError{Field: "timeout_ms", Value: int64(*timeoutMs), Reason: "must be positive"}
		}
		if err := pick("timeout_ms", int64(*timeoutMs), ceil.TimeoutMs, &out.TimeoutMs); err != nil {
			return out, err
		}
	}
	if req == nil {
		return out, nil
	}
	var cpu, fds, procs int64 = int64(out.CPUPercent), int64(out.FileDescriptors), int64(out.Processes)
	steps := []struct {
		field   string
		v, ceil int64
		dst     *int64
	}{
		{"limits.max_memory_bytes", req.GetMaxMemoryBytes(), ceil.MemoryBytes, &out.MemoryBytes},
		{"limits.max_cpu_percent", int64(req.GetMaxCpuPercent()), int64(ceil.CPUPercent), &cpu},
		{"limits.max_file_descriptors", int64(req.GetMaxFileDescriptors()), int64(ceil.FileDescriptors), &fds},
		{"limits.max_processes", int64(req.GetMaxProcesses()), int64(ceil.Processes), &procs},
		{"limits.max_output_bytes", req.GetMaxOutputBytes(), ceil.OutputBytes, &out.OutputBytes},
		{"limits.timeout_ms", req.GetTimeoutMs(), ceil.TimeoutMs, &out.TimeoutMs},
		{"limits.cpu_time_ms", req.GetCpuTimeMs(), ceil.CPUTimeMs, &out.CPUTimeMs},
		{"limits.workspace_bytes", req.GetWorkspaceBytes(), ceil.WorkspaceBytes, &out.WorkspaceBytes},
	}
	for _, s := range steps {
		if err := pick(s.field, s.v, s.ceil, s.dst); err != nil {
			return out, err
		}
	}
	out.CPUPercent, out.FileDescriptors, out.Processes = int32(cpu), int32(fds), int32(procs)
	return out, nil
}

// checkMinimums refuses limits below which the program cannot start at
// all: it says so instead of failing obscurely inside the sandbox.
func (l Set) checkMinimums() error {
	minimums := []struct {
		field string
		v     int64
		min   int64
		why   string // "" = nothing to add
	}{
		{"limits.max_memory_bytes", l.MemoryBytes, 16 << 20, ""},
		{"limits.max_cpu_percent", int64(l.CPUPercent), MinCPUPercent, ""},
		{"limits.max_file_descriptors", int64(l.FileDescriptors), MinFileDescriptors,
			"every runtime: the sandbox's worker holds some of them when it starts the program"},
		{"limits.max_processes", int64(l.Processes), MinProcesses, ""},
		{"limits.workspace_bytes", l.WorkspaceBytes, MinWorkspaceBytes, ""},
	}
	if l.CPUTimeMs > 0 && l.CPUTimeMs < MinCPUTimeMs {
		return &FieldError{Field: "limits.cpu_time_ms", Value: l.CPUTimeMs, Reason: fmt.Sprintf("below the minimum %d (the limit is checked every %s)", MinCPUTimeMs, CPUTimeCheckInterval)}
	}
	for _, m := range minimums {
		if m.v < m.min {
			reason := fmt.Sprintf("below the minimum %d", m.min)
			if m.why != "" {
				reason += " (" + m.why + ")"
			}
			return &FieldError{Field: m.field, Value: m.v, Reason: reason}
		}
	}
	return nil
}

// Rlimits returns the rlimits of a runtime process with limits l.
func (l Set) Rlimits() []*workerv1.Rlimit {
	var out []*workerv1.Rlimit
	if l.FileDescriptors > 0 {
		n := uint64(l.FileDescriptors)
		out = append(out, &workerv1.Rlimit{Resource: "NOFILE", Soft: n, Hard: n})
	}
	// Files written by the program are bounded by the workspace anyway;
	// RLIMIT_FSIZE makes a single runaway write fail early and clearly.
	fsz := uint64(l.WorkspaceBytes)
	return append(out, &workerv1.Rlimit{Resource: "FSIZE", Soft: fsz, Hard: fsz})
}

// Spec is the sandbox a run with limits l needs: its cgroup limits, a
// workspace of WorkspaceBytes, and /tmp and /dev/shm of ScratchBytes
// each (and System V shared memory of as much, bounded in the sandbox's
// IPC namespace by the supervisor: sysvipc.LimitsFor). The warm pool holds sandboxes of the resolved server defaults'
// Spec.
func (l Set) Spec() sandbox.Spec {
	scratch := l.ScratchBytes()
	return sandbox.Spec{
		Limits: cgroup.Limits{
			MemoryMaxBytes: l.MemoryBytes,
			PidsMax:        int64(l.Processes),
			CPUQuotaMicros: int64(l.CPUPercent) * 1000,
		},
		WorkspaceBytes:  l.WorkspaceBytes,
		TmpBytes:        scratch,
		ShmBytes:        scratch,
		FileDescriptors: int64(l.FileDescriptors),
	}
}
