package limits

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// The sandbox's writable tmpfs mounts (/workspace, /tmp, /dev/shm) are
// charged to its memory cgroup, and their pages belong to no process: a
// sandbox whose files alone filled its memory limit left the OOM killer no
// candidate but its worker (the sandbox's init), so a session sandbox
// ended and lost its files (red-team pass). The rule that prevents it:
//
//	charge(workspace) + charge(tmp) + charge(shm) + sysv(shm) <= memory - ReserveBytes(memory)
//
// where charge is rootfs.TmpfsChargeBytes (a mount's pages and its inodes'
// kernel memory when full) and sysv is sysvipc.ShmChargeBytes: System V
// shared memory segments, charged to the sandbox and belonging to no
// process like files, are bounded in the sandbox's IPC namespace to as
// much again as /dev/shm (120 MiB of segments OOM-killed a 128 MiB session
// sandbox's worker; red-team pass). Both are shared memory a program may
// choose between, so they get the same size; sysv(s) <= charge(s), so
// the budget counts it as a third scratch tmpfs. Files and segments alone
// therefore fail with ENOSPC while at least ReserveBytes of the memory
// limit is left for the worker and the programs (less the message queues
// and semaphores, bounded alike in every sandbox to pin at most
// sysvipc.MsgSemChargeBytes, 1.2 MiB). /tmp, /dev/shm and the
// segments, which requests cannot size, shrink first (from
// rootfs.DefaultTmpfsBytes down to MinScratchBytes, equal sizes); then a
// default workspace is lowered to fit, and a workspace the request names
// that cannot fit is refused (Resolve).

// MaxReserveBytes is the most of a sandbox's memory limit that its
// tmpfs mounts leave free: 32 MiB. Measured on cgroup v1
// (memory.usage_in_bytes): an idle session sandbox uses 2.6 MiB (the
// worker's anonymous memory 2.1 MiB, kernel memory 0.4 MiB; the worker's
// RSS is 15 MiB and its PSS 9 MiB, mostly the binary's shared file pages),
// and the worker's anonymous memory grows to 7.3 MiB while it writes a
// 40 MiB upload; the rest is for the programs writing the files (a shell
// and dd take about 2 MiB, python3 about 4 MiB) and for names longer than
// a dentry holds inline (rootfs.InodeChargeBytes).
const MaxReserveBytes = 32 << 20

// MinScratchBytes is the smallest /tmp and /dev/shm: they shrink to fit
// the memory limit down to this size, 1 MiB.
const MinScratchBytes = 1 << 20

// MinWorkspaceBytes is the smallest workspace a request may ask for.
const MinWorkspaceBytes = 1 << 20

// ReserveBytes is the part of a memory limit of memoryBytes that the
// sandbox's tmpfs mounts leave free: half the limit, at most
// MaxReserveBytes (so a 64 MiB sandbox or larger keeps 32 MiB; the
// minimum, 16 MiB, keeps 8 MiB).
func ReserveBytes(memoryBytes int64) int64 { return min(MaxReserveBytes, memoryBytes/2) }

// FilesBudgetBytes is what the tmpfs mounts of a sandbox with a memory
// limit of memoryBytes may charge together: the limit less ReserveBytes.
func FilesBudgetBytes(memoryBytes int64) int64 { return memoryBytes - ReserveBytes(memoryBytes) }

// MaxWorkspaceBytes is the largest workspace, in bytes (a multiple of
// 4 KiB), that fits a memory limit of memoryBytes beside /tmp, /dev/shm
// and System V shared memory of MinScratchBytes each; 0 if even
// MinWorkspaceBytes does not.
func MaxWorkspaceBytes(memoryBytes int64) int64 {
	room := FilesBudgetBytes(memoryBytes) - scratchShares*rootfs.TmpfsChargeBytes(MinScratchBytes)
	ws := largestTmpfs(room)
	if ws < MinWorkspaceBytes {
		return 0
	}
	return ws
}

// scratchShares is how many equal shares of the files budget left beside
// the workspace there are: /tmp, /dev/shm and System V shared memory
// (bounded to /dev/shm's size, sysvipc.LimitsFor).
const scratchShares = 3

// ScratchBytes is the size of /tmp and of /dev/shm of a sandbox with
// limits l, and the bound of its System V shared memory: each
// rootfs.DefaultTmpfsBytes, or less so that the three mounts and the
// segments fit the memory limit (see MaxReserveBytes), but not under
// MinScratchBytes (a Set that Resolve did not return may then not fit).
func (l Set) ScratchBytes() int64 {
	room := FilesBudgetBytes(l.MemoryBytes) - rootfs.TmpfsChargeBytes(l.WorkspaceBytes)
	return min(int64(rootfs.DefaultTmpfsBytes), max(MinScratchBytes, largestTmpfs(room/scratchShares)))
}

// largestTmpfs is the largest size, a multiple of 4 KiB, of a tmpfs whose
// charge (rootfs.TmpfsChargeBytes) is at most chargeBytes; 0 if none is.
func largestTmpfs(chargeBytes int64) int64 {
	if chargeBytes < rootfs.TmpfsChargeBytes(4096) {
		return 0
	}
	// The charge is the size and 1 KiB per 4 KiB above a floor of inodes:
	// start from the size 4/5 of it would be, then step down to fit.
	size := chargeBytes / 5 * 4 / 4096 * 4096
	for size > 4096 && rootfs.TmpfsChargeBytes(size) > chargeBytes {
		size -= 4096
	}
	for rootfs.TmpfsChargeBytes(size+4096) <= chargeBytes {
		size += 4096
	}
	return size
}

// fitTmpfs lowers a default workspace to what fits l's memory limit, or
// refuses a workspace the request named (explicit) that does not fit, or
// a memory limit with no room for any workspace: a *FieldError naming
// both fields.
func (l Set) fitTmpfs(explicit bool) (Set, error) {
	most := MaxWorkspaceBytes(l.MemoryBytes)
	if most == 0 {
		return l, &FieldError{Field: "limits.max_memory_bytes", Value: l.MemoryBytes,
			Reason: fmt.Sprintf("leaves no room for limits.workspace_bytes of %d with /tmp, /dev/shm and System V shared memory of %d each (files may take the limit less %d)",
				MinWorkspaceBytes, MinScratchBytes, ReserveBytes(l.MemoryBytes))}
	}
	if l.WorkspaceBytes <= most {
		return l, nil
	}
	if !explicit {
		l.WorkspaceBytes = most
		return l, nil
	}
	return l, &FieldError{Field: "limits.workspace_bytes", Value: l.WorkspaceBytes,
		Reason: fmt.Sprintf("does not fit limits.max_memory_bytes %d: at most %d (the workspace, /tmp, /dev/shm and System V shared memory of at least %d each, and 1 KiB per inode, may take the limit less %d for the sandbox's processes)",
			l.MemoryBytes, most, MinScratchBytes, ReserveBytes(l.MemoryBytes))}
}
