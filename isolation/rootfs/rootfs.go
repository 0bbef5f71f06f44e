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
	// WorkspaceDir, /tmp and /dev/shm; 0 means 64 MiB. Their pages are
	// charged to the sandbox's memory cgroup. The workspace holds one
	// inode per 4 KiB of its size, at least 16384 (/tmp: 16384).
	WorkspaceBytes, TmpBytes, ShmBytes int64
	// UID and GID own the workspace (the sandbox user, 1000).
	UID, GID int
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
// boot's identity, the same in every sandbox of a boot.
var maskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/sysrq-trigger",
	"/proc/interrupts", "/proc/kallsyms", "/proc/kmsg",
	"/proc/pressure", "/proc/config.gz", "/proc/sys/kernel/random/boot_id",
}

// readOnlyPaths are /proc entries remounted read-only (runc's default).
var readOnlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
}

// devices are the host device nodes bound into the sandbox's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom"}
