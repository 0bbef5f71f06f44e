package limits

import (
	"errors"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/isolation/sysvipc"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// filesCharge is the most the tmpfs mounts and the System V shared
// memory of l's sandbox charge to its memory cgroup when full.
func filesCharge(l Set) int64 {
	s := l.Spec()
	return rootfs.TmpfsChargeBytes(s.WorkspaceBytes) + rootfs.TmpfsChargeBytes(s.TmpBytes) + rootfs.TmpfsChargeBytes(s.ShmBytes) +
		sysvipc.ShmChargeBytes(s.ShmBytes)
}

// TestTmpfsFitMemory: for every memory limit a request may ask, the
// workspace, /tmp and /dev/shm full (pages and inodes) and System V
// shared memory full (bounded to /dev/shm's size) leave at least
// ReserveBytes of it free; /tmp and /dev/shm shrink before a default
// workspace does, and the server defaults' sandbox (the warm pool's) keeps
// 64 MiB each.
func TestTmpfsFitMemory(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		memory        int64
		ws, scratch   int64 // want; 0 = only check the bound
		wsLowered     bool
		scratchShrunk bool
	}{
		{memory: 16 * mib, wsLowered: true, scratch: MinScratchBytes},
		{memory: 32 * mib, wsLowered: true, scratch: MinScratchBytes},
		{memory: 64 * mib, wsLowered: true, scratch: MinScratchBytes},
		{memory: 100 * mib, wsLowered: true, scratch: MinScratchBytes},
		{memory: 128 * mib, ws: 64 * mib, scratchShrunk: true},
		{memory: 272 * mib, ws: 64 * mib, scratchShrunk: true},
		{memory: 352 * mib, ws: 64 * mib, scratch: 64 * mib},
		{memory: 512 * mib, ws: 64 * mib, scratch: 64 * mib},
		{memory: 8 << 30, ws: 64 * mib, scratch: 64 * mib},
	}
	for _, tt := range tests {
		l, err := Resolve(&sandboxv1.ResourceLimits{MaxMemoryBytes: tt.memory}, nil, Default(), DefaultCeilings())
		if err != nil {
			t.Fatalf("memory %d: %v", tt.memory, err)
		}
		spec := l.Spec()
		if c, most := filesCharge(l), tt.memory-ReserveBytes(tt.memory); c > most {
			t.Errorf("memory %d: files may charge %d, more than %d", tt.memory, c, most)
		}
		if spec.WorkspaceBytes < MinWorkspaceBytes || spec.TmpBytes < MinScratchBytes || spec.ShmBytes != spec.TmpBytes {
			t.Errorf("memory %d: %+v under the minimums", tt.memory, spec)
		}
		if spec.WorkspaceBytes != l.WorkspaceBytes || l.Rlimits()[1].Soft != uint64(l.WorkspaceBytes) {
			t.Errorf("memory %d: workspace %d, Spec %d, RLIMIT_FSIZE %v", tt.memory, l.WorkspaceBytes, spec.WorkspaceBytes, l.Rlimits())
		}
		if tt.ws != 0 && spec.WorkspaceBytes != tt.ws {
			t.Errorf("memory %d: workspace %d, want %d", tt.memory, spec.WorkspaceBytes, tt.ws)
		}
		if tt.wsLowered && (spec.WorkspaceBytes >= Default().WorkspaceBytes || spec.WorkspaceBytes != MaxWorkspaceBytes(tt.memory)) {
			t.Errorf("memory %d: workspace %d, want lowered to %d", tt.memory, spec.WorkspaceBytes, MaxWorkspaceBytes(tt.memory))
		}
		if tt.scratch != 0 && spec.TmpBytes != tt.scratch {
			t.Errorf("memory %d: /tmp %d, want %d", tt.memory, spec.TmpBytes, tt.scratch)
		}
		if tt.scratchShrunk && (spec.TmpBytes <= MinScratchBytes || spec.TmpBytes >= rootfs.DefaultTmpfsBytes) {
			t.Errorf("memory %d: /tmp %d, want shrunk between %d and %d", tt.memory, spec.TmpBytes, MinScratchBytes, rootfs.DefaultTmpfsBytes)
		}
	}
	if d, err := Resolve(nil, nil, Default(), DefaultCeilings()); err != nil || d != Default() ||
		d.Spec().WorkspaceBytes != 64<<20 || d.Spec().TmpBytes != 64<<20 || d.Spec().ShmBytes != 64<<20 {
		t.Fatalf("defaults resolve to %+v (%+v), %v; want Default() with 64 MiB mounts", d, d.Spec(), err)
	}
}

// TestTmpfsExplicitWorkspace: a workspace the request names is kept when
// it fits the memory limit (with /tmp and /dev/shm shrunk to their
// minimum) and refused naming both fields when it does not; a default
// workspace over a memory default too small is lowered, not refused.
func TestTmpfsExplicitWorkspace(t *testing.T) {
	for _, memory := range []int64{16 << 20, 128 << 20, 1 << 30} {
		most := MaxWorkspaceBytes(memory)
		l, err := Resolve(&sandboxv1.ResourceLimits{MaxMemoryBytes: memory, WorkspaceBytes: most}, nil, Default(), DefaultCeilings())
		if err != nil || l.WorkspaceBytes != most || l.ScratchBytes() != MinScratchBytes || filesCharge(l) > FilesBudgetBytes(memory) {
			t.Fatalf("memory %d, workspace %d: %+v, %v", memory, most, l, err)
		}
		_, err = Resolve(&sandboxv1.ResourceLimits{MaxMemoryBytes: memory, WorkspaceBytes: most + 4096}, nil, Default(), DefaultCeilings())
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "limits.workspace_bytes" || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limits.max_memory_bytes") {
			t.Fatalf("memory %d, workspace %d: %v; want a FieldError on limits.workspace_bytes naming limits.max_memory_bytes", memory, most+4096, err)
		}
	}
	// The server's default memory too: a profile or request that lowers
	// only the memory keeps a usable sandbox.
	def := Default()
	def.MemoryBytes = 32 << 20
	if l, err := Resolve(nil, nil, def, DefaultCeilings()); err != nil || l.WorkspaceBytes != MaxWorkspaceBytes(32<<20) {
		t.Fatalf("default memory 32 MiB: %+v, %v", l, err)
	}
	def.MemoryBytes = 4 << 20 // below the minimum; defaults skip the minimums
	if _, err := Resolve(nil, nil, def, DefaultCeilings()); err == nil || !strings.Contains(err.Error(), "limits.max_memory_bytes") {
		t.Fatalf("default memory 4 MiB: %v; want refused", err)
	}
}

// TestLargestTmpfs: largestTmpfs inverts rootfs.TmpfsChargeBytes: the
// size it returns fits, one page more does not.
func TestLargestTmpfs(t *testing.T) {
	for _, c := range []int64{0, 4096, 266239, 266240, 1 << 20, 1<<20 + 1234, 5 << 20, 96 << 20, 8 << 30} {
		s := largestTmpfs(c)
		if s%4096 != 0 || (s > 0 && rootfs.TmpfsChargeBytes(s) > c) || rootfs.TmpfsChargeBytes(s+4096) <= c {
			t.Errorf("largestTmpfs(%d) = %d (charge %d, one page more %d)", c, s, rootfs.TmpfsChargeBytes(s), rootfs.TmpfsChargeBytes(s+4096))
		}
	}
}
