package sysvipc

import (
	"strconv"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// Limits are the System V IPC limits of one IPC namespace, in the units
// of their sysctls (Documentation/admin-guide/sysctl/kernel.rst). A fresh
// IPC namespace starts with the kernel's defaults, which bound nothing
// that matters (kernel.shmall is 2^64 - 2^24 pages).
type Limits struct {
	// ShmMaxBytes is kernel.shmmax: the largest segment, in bytes; shmget
	// of a larger one fails with EINVAL.
	ShmMaxBytes int64
	// ShmAllPages is kernel.shmall: the pages of every segment together,
	// in units of the system page size; a segment past it fails with
	// ENOSPC.
	ShmAllPages int64
	// ShmSegments is kernel.shmmni: the most segments at once; one more
	// fails with ENOSPC.
	ShmSegments int64
	// MsgQueues is kernel.msgmni: the most message queues; one more fails
	// with ENOSPC.
	MsgQueues int64
	// MsgQueueBytes is kernel.msgmnb: the bytes, and the messages, one
	// queue holds (its msg_qbytes); msgsnd past it waits or fails with
	// EAGAIN. Raising a queue's msg_qbytes above it takes CAP_SYS_RESOURCE
	// in the initial user namespace.
	MsgQueueBytes int64
	// MsgMaxBytes is kernel.msgmax: the largest message; msgsnd of a
	// larger one fails with EINVAL.
	MsgMaxBytes int64
	// SemPerSet, SemTotal, SemOpsPerCall and SemSets are kernel.sem
	// (SEMMSL, SEMMNS, SEMOPM, SEMMNI): the semaphores of one set and of
	// all sets, the operations of one semop, and the sets.
	SemPerSet, SemTotal, SemOpsPerCall, SemSets int64
}

// MaxShmSegments is the most System V shared memory segments a sandbox
// may hold: the kernel's default kernel.shmmni (SHMMNI, 4096).
const MaxShmSegments = 4096

// ShmSegmentChargeBytes is what one shared memory segment may charge
// beyond its pages: its shmid_kernel, the shmem inode and dentry and the
// open file behind it, each about the size of a tmpfs inode's
// (rootfs.InodeChargeBytes); 2 KiB is counted for them together.
const ShmSegmentChargeBytes = 2 * rootfs.InodeChargeBytes

// Message queues and semaphores are not sized by the sandbox's limits:
// every sandbox gets the bounds below, which programs (PostgreSQL's
// semaphores, a test of msgsnd) need little of. What they can pin is
// MsgSemChargeBytes, out of the reserve the files budget leaves
// (supervisor/limits): a message is a msg_msg of 48 bytes and its text
// in one kmalloc, so a queue holds at most MsgQueueBytes messages of at
// most 64 bytes each (empty or up to 16 bytes of text; larger ones are
// fewer), 64 times MsgQueueBytes; a semaphore is a struct sem of one
// cache line, a set about 1 KiB beside them. SEM_UNDO records belong to
// their process and go with it.
const (
	// MsgQueues is the kernel.msgmni of every sandbox (the kernel's
	// default is 32000).
	MsgQueues = 4
	// MsgQueueBytes is the kernel.msgmnb of every sandbox (default 16384).
	MsgQueueBytes = 4096
	// MsgMaxBytes is the kernel.msgmax of every sandbox (default 8192).
	MsgMaxBytes = 4096
	// SemPerSet, SemTotal, SemOpsPerCall, SemSets are the kernel.sem of
	// every sandbox (default 32000 1024000000 500 32000).
	SemPerSet, SemTotal, SemOpsPerCall, SemSets = 32, 1024, 32, 128
	// MsgSemChargeBytes is the most kernel memory the message queues and
	// semaphores of a sandbox can pin: 1 MiB of messages, 64 KiB of
	// semaphores and 1 KiB per queue and per set, 1.2 MiB in all.
	MsgSemChargeBytes = MsgQueues*(MsgQueueBytes*64+1024) + SemTotal*64 + SemSets*1024
)

// LimitsFor are the System V IPC limits of a sandbox whose /dev/shm is
// shmBytes (0 = rootfs.DefaultTmpfsBytes) on a system of pageSize bytes
// per page: shared memory of shmBytes in all and in one segment, in half
// as many segments as a tmpfs of that size holds inodes (each charges
// twice an inode), at most MaxShmSegments; message queues and semaphores
// of the fixed bounds above. Full, the shared memory charges at most
// ShmChargeBytes(shmBytes).
func LimitsFor(shmBytes, pageSize int64) Limits {
	if shmBytes <= 0 {
		shmBytes = rootfs.DefaultTmpfsBytes
	}
	return Limits{
		ShmMaxBytes: shmBytes,
		ShmAllPages: shmBytes / pageSize,
		ShmSegments: min(MaxShmSegments, rootfs.TmpfsInodes(shmBytes)/2),
		MsgQueues:   MsgQueues, MsgQueueBytes: MsgQueueBytes, MsgMaxBytes: MsgMaxBytes,
		SemPerSet: SemPerSet, SemTotal: SemTotal, SemOpsPerCall: SemOpsPerCall, SemSets: SemSets,
	}
}

// ShmChargeBytes is the most memory the System V shared memory of a
// sandbox whose /dev/shm is shmBytes (0 = rootfs.DefaultTmpfsBytes)
// charges to its memory cgroup: its pages and ShmSegmentChargeBytes per
// segment. It is at most rootfs.TmpfsChargeBytes(shmBytes), so a budget
// that fits a tmpfs of shmBytes fits it.
func ShmChargeBytes(shmBytes int64) int64 {
	if shmBytes <= 0 {
		shmBytes = rootfs.DefaultTmpfsBytes
	}
	l := LimitsFor(shmBytes, 4096)
	return l.ShmAllPages*4096 + l.ShmSegments*ShmSegmentChargeBytes
}

// sysctl is one file below /proc/sys/kernel and the value Apply writes to it,
// as the kernel prints it back (kernel.sem's fields separated by tabs).
type sysctl struct{ name, value string }

// sysctls are l's files and values, in the order Apply writes them.
func (l Limits) sysctls() []sysctl {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []sysctl{
		{"shmmax", i(l.ShmMaxBytes)},
		{"shmall", i(l.ShmAllPages)},
		{"shmmni", i(l.ShmSegments)},
		{"msgmni", i(l.MsgQueues)},
		{"msgmnb", i(l.MsgQueueBytes)},
		{"msgmax", i(l.MsgMaxBytes)},
		{"sem", i(l.SemPerSet) + "\t" + i(l.SemTotal) + "\t" + i(l.SemOpsPerCall) + "\t" + i(l.SemSets)},
	}
}
