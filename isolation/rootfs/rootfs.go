package rootfs

// Config describes the root filesystem of one sandbox. Paths named "host"
// are paths in the worker's view before pivot_root (the host's tree).
type Config struct {
	// Root is an existing empty host directory on which the new root tmpfs
	// is mounted (only in the sandbox's mount namespace).
	Root string
	// ReadOnly lists host directories bound read-only at the same path,
	// e.g. "/usr". A host path that is a symlink (merged /usr: /bin ->
	// usr/bin) is recreated as the same symlink. Missing paths are skipped.
	ReadOnly []string
	// Files are written into the new root before it is made read-only,
	// keyed by absolute sandbox path (e.g. "/etc/passwd"), mode 0644.
	Files map[string]string
	// ReadOnlyFiles binds single host files read-only at the same path
	// (e.g. "/etc/ld.so.cache"). Missing files are skipped.
	ReadOnlyFiles []string
	// Binds are host directories bound read-only (recursively) at another
	// sandbox path, e.g. the node runtime bundle at /.execfarm/node.
	Binds []Bind
	// GojaBinary is the host path of the goja runtime binary
	// (execfarm-goja), bound read-only at GojaPath; "" = none.
	GojaBinary string
	// WorkspaceBytes, TmpBytes and ShmBytes size the tmpfs mounted at
	// WorkspaceDir, /tmp and /dev/shm; 0 means DefaultTmpfsBytes. Their
	// pages and inodes are charged to the sandbox's memory cgroup, at most
	// TmpfsChargeBytes each; each holds TmpfsInodes of its size.
	WorkspaceBytes, TmpBytes, ShmBytes int64
	// UID and GID own the workspace (the sandbox user, 1000).
	UID, GID int
}

// DefaultTmpfsBytes is the size of a writable tmpfs whose Config field is
// 0: 64 MiB.
const DefaultTmpfsBytes = 64 << 20

// InodeChargeBytes is what one inode of a sandbox tmpfs may charge to the
// sandbox's memory cgroup beyond its data pages: the kernel's own figure
// for a tmpfs inode (BOGO_INODE_SIZE, 1 KiB, which since Linux 6.6 also
// bounds an inode's user.* xattrs). Measured on cgroup v1: an empty file
// with a short name costs 1007 bytes of kernel memory (inode and dentry);
// a name over 32 bytes adds its own allocation, up to about 0.5 KiB.
const InodeChargeBytes = 1024

// MinTmpfsInodes is the fewest inodes a writable tmpfs holds.
const MinTmpfsInodes = 256

// TmpfsInodes is the inode limit (nr_inodes) of a writable tmpfs of size
// bytes: one per 4 KiB page, at least MinTmpfsInodes. A non-empty file
// takes at least one page, so a tmpfs of N bytes holds at most N/4096 files
// with data anyway; 64 MiB holds 16384.
func TmpfsInodes(bytes int64) int64 { return max(MinTmpfsInodes, bytes/4096) }

// TmpfsChargeBytes is the most memory a writable tmpfs of size bytes
// (0 = DefaultTmpfsBytes) charges to the sandbox's memory cgroup when
// full: its size rounded up to pages (the kernel's rounding), and
// InodeChargeBytes per inode.
func TmpfsChargeBytes(bytes int64) int64 {
	if bytes <= 0 {
		bytes = DefaultTmpfsBytes
	}
	pages := (bytes + 4095) / 4096 * 4096
	return pages + TmpfsInodes(bytes)*InodeChargeBytes
}

// Bind is a read-only bind mount of host directory Source at sandbox path
// Target (absolute).
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// WorkspaceDir is the sandbox's writable working directory.
const WorkspaceDir = "/workspace"

// MqueueDir is where the sandbox's POSIX message queues appear as files.
const MqueueDir = "/dev/mqueue"

// ScratchDirs are the sandbox's writable directories (tmpfs mounts, and the
// message queue filesystem): a reused sandbox's reset empties them.
var ScratchDirs = []string{WorkspaceDir, "/tmp", "/dev/shm", MqueueDir}

// PtysPerSandbox is the most pseudo-terminals a sandbox may hold at once:
// the `max` of its private devpts instance; one more openpty fails with
// ENOSPC. Every devpts instance but the host's initial one draws from one
// host-wide pool (kernel.pty.max less kernel.pty.reserve, 3072 by
// default), which a sandbox with no bound emptied in a second for every
// other sandbox and container (red-team pass); the supervisor makes room
// in that pool for PtysPerSandbox per sandbox (supervisor/host.ReservePtys).
const PtysPerSandbox = 16

// GojaPath is where the goja runtime binary is visible inside the sandbox.
const GojaPath = "/.execfarm/goja"

// maskedPaths are /proc entries hidden behind /dev/null (files) or an empty
// read-only tmpfs (directories): runc's and Docker's default list, then
// entries that describe the host rather than the sandbox: /proc/pressure
// (the host's CPU, memory and I/O stall figures, which follow what other
// sandboxes do), /proc/config.gz (the kernel's build configuration) and the
// boot's identity, the same in every sandbox of a boot, /proc/locks
// (every lock of the host, with device, inode and the owner's pid), and
// the host-wide counts that move with what other sandboxes do: cgroups per
// controller (/proc/cgroups, one more at each sandbox's start), pseudo-
// terminals in use, open files, inodes and dentries (red-team pass).
var maskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/sysrq-trigger",
	"/proc/interrupts", "/proc/kallsyms", "/proc/kmsg",
	"/proc/pressure", "/proc/config.gz", "/proc/sys/kernel/random/boot_id",
	"/proc/locks",
	"/proc/cgroups", "/proc/sys/kernel/pty/nr", "/proc/sys/fs/file-nr",
	"/proc/sys/fs/inode-nr", "/proc/sys/fs/inode-state", "/proc/sys/fs/dentry-state",
}

// readOnlyPaths are /proc entries remounted read-only (runc's default).
var readOnlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
}

// devices are the host device nodes bound into the sandbox's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom"}
