package limits

import "github.com/execfarm/execfarm/proto/sandboxv1"

// ToProto returns l as the wire's ResourceLimits (a result's effective
// limits).
func (l Set) ToProto() *sandboxv1.ResourceLimits {
	return &sandboxv1.ResourceLimits{
		MaxMemoryBytes: l.MemoryBytes, MaxCpuPercent: l.CPUPercent,
		MaxFileDescriptors: l.FileDescriptors, MaxProcesses: l.Processes,
		MaxOutputBytes: l.OutputBytes, TimeoutMs: l.TimeoutMs,
		CpuTimeMs: l.CPUTimeMs, WorkspaceBytes: l.WorkspaceBytes,
	}
}
