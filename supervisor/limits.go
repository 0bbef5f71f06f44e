package supervisor

import (
	"fmt"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Limits are the resource limits of one execution, resolved from the
// request, the server's defaults and its ceilings.
type Limits struct {
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
	// WorkspaceBytes sizes the workspace tmpfs, bytes.
	WorkspaceBytes int64
}

// minCPUTimeMs is the smallest CPU-time limit: it is enforced by reading
// the cgroup every cpuPollInterval, so a smaller one could not be exact.
const minCPUTimeMs = 100

// DefaultLimits are the server defaults when no flag changes them.
var DefaultLimits = Limits{
	MemoryBytes: 512 << 20, CPUPercent: 100, FileDescriptors: 1024, Processes: 256,
	OutputBytes: 1 << 20, TimeoutMs: 30_000, CPUTimeMs: 0, WorkspaceBytes: 64 << 20,
}

// DefaultCeilings are the largest values a request may ask for.
var DefaultCeilings = Limits{
	MemoryBytes: 8 << 30, CPUPercent: 800, FileDescriptors: 65536, Processes: 4096,
	OutputBytes: 64 << 20, TimeoutMs: 600_000, CPUTimeMs: 600_000, WorkspaceBytes: 2 << 30,
}

// LimitError names the request field that is out of range; it maps to
// INVALID_ARGUMENT.
type LimitError struct {
	Field  string
	Value  int64
	Reason string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("invalid %s %d: %s", e.Field, e.Value, e.Reason)
}

// resolveLimits applies the request's limits over the defaults and checks
// them against the ceilings. Zero in a request field means "default";
// negative values and values above the ceiling are errors naming the field.
// The request's top-level timeout_ms (ProDisco's) applies unless
// limits.timeout_ms is set.
func resolveLimits(req *sandboxv1.ResourceLimits, timeoutMs *int32, def, ceil Limits) (Limits, error) {
	out := def
	pick := func(field string, v, ceiling int64, dst *int64) error {
		switch {
		case v < 0:
			return &LimitError{Field: field, Value: v, Reason: "must not be negative"}
		case v == 0:
			return nil
		case v > ceiling:
			return &LimitError{Field: field, Value: v, Reason: fmt.Sprintf("above the server's ceiling %d", ceiling)}
		}
		*dst = v
		return nil
	}
	if timeoutMs != nil {
		if *timeoutMs <= 0 {
			return out, &LimitError{Field: "timeout_ms", Value: int64(*timeoutMs), Reason: "must be positive"}
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
	// Below these the program cannot start at all: say so instead of
	// failing obscurely inside the sandbox.
	minimums := []struct {
		field string
		v     int64
		min   int64
	}{
		{"limits.max_memory_bytes", out.MemoryBytes, 16 << 20},
		// The worker's own start-up runs under the sandbox's CPU quota.
		{"limits.max_cpu_percent", int64(out.CPUPercent), 10},
		{"limits.max_file_descriptors", int64(out.FileDescriptors), 16},
		{"limits.max_processes", int64(out.Processes), 8},
		{"limits.workspace_bytes", out.WorkspaceBytes, 1 << 20},
	}
	if out.CPUTimeMs > 0 && out.CPUTimeMs < minCPUTimeMs {
		return out, &LimitError{Field: "limits.cpu_time_ms", Value: out.CPUTimeMs, Reason: fmt.Sprintf("below the minimum %d (the limit is checked every %s)", minCPUTimeMs, cpuPollInterval)}
	}
	for _, m := range minimums {
		if m.v < m.min {
			return out, &LimitError{Field: m.field, Value: m.v, Reason: fmt.Sprintf("below the minimum %d", m.min)}
		}
	}
	return out, nil
}

// toProto returns l as the wire's ResourceLimits.
func (l Limits) toProto() *sandboxv1.ResourceLimits {
	return &sandboxv1.ResourceLimits{
		MaxMemoryBytes: l.MemoryBytes, MaxCpuPercent: l.CPUPercent,
		MaxFileDescriptors: l.FileDescriptors, MaxProcesses: l.Processes,
		MaxOutputBytes: l.OutputBytes, TimeoutMs: l.TimeoutMs,
		CpuTimeMs: l.CPUTimeMs, WorkspaceBytes: l.WorkspaceBytes,
	}
}
