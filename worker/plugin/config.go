package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// EnvConfig is the environment variable through which the supervisor hands
// the worker its SandboxConfig (JSON). The worker unsets it before any
// runtime process starts.
const EnvConfig = "EXECFARM_SANDBOX_CONFIG"

// SyncFD is the file descriptor on which a worker started on cgroup v1
// blocks until the supervisor has placed it in its cgroup (the supervisor
// closes its end; EOF releases the worker).
const SyncFD = 3

// MaxConcurrentExecs is how many execs a session sandbox runs at once
// (Worker.Exec; beyond, RESOURCE_EXHAUSTED). Each costs the worker about
// six descriptors, three goroutines and up to 1.5 MiB of buffered stdin
// and output, charged to the sandbox; the sandbox's pids limit bounds
// their processes together.
const MaxConcurrentExecs = 16

// MaxListBytes bounds a listing (Worker.List), bytes: the worker sends
// entries, in name order, while the sum of their paths (the request's
// path, "/" and the name) and symbolic link targets stays within it, and
// reports the rest as truncated. 10000 entries of 255-byte names and
// 4095-byte targets are 43 MB, which the worker, charged to the
// sandbox's memory, would hold at once; the supervisor applies the same
// bound to what it keeps.
const MaxListBytes = 3 << 20

// SandboxConfig is what the worker needs to build its sandbox.
type SandboxConfig struct {
	// ID names the sandbox (hostname suffix, logs).
	ID string `json:"id"`
	// Root is the host directory on which the new root is mounted.
	Root string `json:"root"`
	// GojaBinary is the host path of the goja runtime binary to bind
	// inside (rootfs.GojaPath).
	GojaBinary string `json:"goja_binary"`
	// ForkUnixNano is when the supervisor forked the worker (wall clock,
	// ns since the epoch): the start of the worker's first start-up phase.
	ForkUnixNano int64 `json:"fork_unix_nano,omitempty"`
	// WaitSync makes the worker block on SyncFD first (cgroup v1).
	WaitSync bool `json:"wait_sync"`
	// WorkspaceBytes, TmpBytes, ShmBytes size the sandbox's tmpfs mounts;
	// 0 means the rootfs default (64 MiB).
	WorkspaceBytes int64 `json:"workspace_bytes"`
	TmpBytes       int64 `json:"tmp_bytes"`
	ShmBytes       int64 `json:"shm_bytes"`
	// Binds are host directories bound read-only into the sandbox (the
	// node runtime bundle).
	Binds []rootfs.Bind `json:"binds,omitempty"`
	// PayloadProcsFD is the fd of the payload cgroup's cgroup.procs,
	// opened for writing by the supervisor: the worker writes every
	// runtime process's pid to it before the process runs (0 = none).
	PayloadProcsFD int `json:"payload_procs_fd"`
	// PayloadTasksFD is the fd of the payload cgroup's tasks file (cgroup
	// v1; 0 = none): the worker's forking thread writes "0" to it, joining
	// the payload alone, so that every runtime process is born there and
	// needs neither a gate nor a move (PayloadProcsFD is then unused).
	PayloadTasksFD int `json:"payload_tasks_fd,omitempty"`
	// Session makes the worker serve a session sandbox: Worker.Exec and
	// the file calls, several execs at once; it then refuses Run, Prepare
	// and Reset (and a worker without it refuses the session calls).
	Session bool `json:"session,omitempty"`
	// ExecCgroupFD is the worker's end of a session sandbox's descriptor
	// channel (0 = none): a SOCK_SEQPACKET unix socket on which the
	// supervisor sends, before each Exec that has a cgroup of its own,
	// one message: the exec's token (8 bytes, little endian) with the
	// files of cgroup.Manager.NewExec as SCM_RIGHTS: the exec cgroup's
	// tasks file when PayloadTasksFD is set (cgroup v1: the forking
	// thread joins it for the fork), else its cgroup.procs; on v1 with
	// cpuacct in a hierarchy of its own, then the exec's cpuacct cgroup's
	// file of the same kind and, with PayloadTasksFD, the sandbox's
	// cpuacct tasks file, to which the forking thread returns.
	ExecCgroupFD int `json:"exec_cgroup_fd,omitempty"`
	// Seccomp loads the seccomp filter; false only in an explicitly
	// degraded mode named by the operator.
	Seccomp bool `json:"seccomp"`
	// SeccompFilter is the filter to load, assembled once by the
	// supervisor (isolation/seccomp.Encoded, install.Decode): the worker
	// neither links the policy nor assembles it. Required with Seccomp.
	SeccompFilter []byte `json:"seccomp_filter,omitempty"`
}

// Encode returns the KEY=VALUE environment entry carrying c.
func (c SandboxConfig) Encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode sandbox config: %w", err)
	}
	return EnvConfig + "=" + string(b), nil
}

// DecodeConfig parses the value of EnvConfig.
func DecodeConfig(v string) (SandboxConfig, error) {
	var c SandboxConfig
	if v == "" {
		return c, fmt.Errorf("decode sandbox config: %s is not set", EnvConfig)
	}
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return c, fmt.Errorf("decode sandbox config: %w", err)
	}
	return c, nil
}
