package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The host's file table, and why the supervisor may raise fs.file-max.
//
// The kernel counts every open file (struct file) of the host in one
// number, and refuses a new one to every process without CAP_SYS_ADMIN
// (ENFILE) once it reaches fs.file-max, by default one file per 10 KiB of
// RAM. There is no per-user or per-cgroup count of open files. A sandbox's
// descriptors are bounded (processes × RLIMIT_NOFILE), but a file mapped
// and then closed stays open without a descriptor, up to vm.max_map_count
// mappings per process; what really bounds a sandbox's open files is its
// memory: each one's kernel object is charged to the sandbox's memory
// cgroup (the slab is accounted), so a sandbox holds at most
// MemoryBytes / FileBytes files, about 2.9 million in 512 MiB, more than
// the default fs.file-max of a 24 GiB host. Two sandboxes at the default
// limits could refuse a file to every unprivileged host process.
//
// So the supervisor makes room: fs.file-max must cover the host's own
// budget (the kernel's default for this machine) plus what every sandbox
// slot could hold at the server's ceilings (Required); at start it raises
// fs.file-max to that when it is lower (as systemd raises it to its
// maximum on every boot, for the same reason: memory cgroups account open
// files), and never lowers it. Then sandboxes run out of their own memory
// long before the host runs out of files.

// FileTable is what bounds the open files of the host and of a sandbox,
// as /proc and /sys show them.
type FileTable struct {
	// Max is fs.file-max: open files of the host, beyond which processes
	// without CAP_SYS_ADMIN get ENFILE.
	Max int64
	// Allocated is the first field of fs.file-nr: open files now.
	Allocated int64
	// HostBudget is the kernel's default fs.file-max for this machine
	// (MemTotal in KiB / 10, fs/file_table.c): the files the host keeps
	// for itself, whatever sandboxes hold.
	HostBudget int64
	// FileBytes is the kernel memory of one open file charged to its
	// memory cgroup: the object size of the "filp" slab (184 bytes on
	// Linux 6.18). 0 when unknown; minFileBytes is then assumed.
	FileBytes int64
	// MaxMapCount is vm.max_map_count: mappings per process, each of
	// which may hold a file open without a descriptor.
	MaxMapCount int64
	// KmemAccounted is false when kernel memory is not charged to memory
	// cgroups (boot parameter cgroup.memory=nokmem): a sandbox's memory
	// limit then bounds nothing of its files.
	KmemAccounted bool
}

// minFileBytes is assumed for FileTable.FileBytes when the slab's object
// size cannot be read: smaller than struct file has ever been, so the
// bound errs on the side of more files.
const minFileBytes = 128

// SandboxFiles returns the most files one sandbox can hold open with a
// memory limit of memoryBytes, at most processes processes (its pids
// limit) and fds descriptors each (RLIMIT_NOFILE): in descriptor tables,
// held by mappings, in flight in unix sockets (at most RLIMIT_NOFILE per
// user), one executable per process, the worker counted as one more
// process; and, when kernel memory is accounted, no more than its memory
// holds of them.
func (ft FileTable) SandboxFiles(memoryBytes, processes, fds int64) int64 {
	n := (processes+1)*(fds+ft.MaxMapCount+1) + fds
	if ft.KmemAccounted && memoryBytes > 0 {
		n = min(n, memoryBytes/max(ft.FileBytes, minFileBytes))
	}
	return n
}

// Required returns the fs.file-max under which slots sandboxes, each at
// the limits given (see SandboxFiles), leave the host its HostBudget.
func (ft FileTable) Required(slots int, memoryBytes, processes, fds int64) int64 {
	return ft.HostBudget + int64(slots)*ft.SandboxFiles(memoryBytes, processes, fds)
}

// readFileTable reads the host's file table below root ("/" for the
// host; a fake tree in tests): fs.file-max, fs.file-nr, vm.max_map_count,
// MemTotal, the filp slab's object size and the boot parameters.
func readFileTable(root string) (FileTable, error) {
	var ft FileTable
	var err error
	if ft.Max, err = readInt(root, "proc/sys/fs/file-max", 0); err != nil {
		return ft, err
	}
	if ft.Allocated, err = readInt(root, "proc/sys/fs/file-nr", 0); err != nil {
		return ft, err
	}
	if ft.MaxMapCount, err = readInt(root, "proc/sys/vm/max_map_count", 0); err != nil {
		return ft, err
	}
	meminfo, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return ft, fmt.Errorf("host: file table: %w", err)
	}
	for _, l := range strings.Split(string(meminfo), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return ft, fmt.Errorf("host: file table: MemTotal %q: %w", f[1], err)
			}
			ft.HostBudget = kib / 10
		}
	}
	if ft.HostBudget == 0 {
		return ft, fmt.Errorf("host: file table: no MemTotal in %s", filepath.Join(root, "proc/meminfo"))
	}
	// Without SLUB's sysfs, the size stays unknown (minFileBytes).
	ft.FileBytes, _ = readInt(root, "sys/kernel/slab/filp/object_size", 0)
	cmdline, err := os.ReadFile(filepath.Join(root, "proc/cmdline"))
	if err != nil {
		return ft, fmt.Errorf("host: file table: %w", err)
	}
	ft.KmemAccounted = true
	for _, p := range strings.Fields(string(cmdline)) {
		if v, ok := strings.CutPrefix(p, "cgroup.memory="); ok {
			for _, o := range strings.Split(v, ",") {
				if o == "nokmem" {
					ft.KmemAccounted = false
				}
			}
		}
	}
	return ft, nil
}

// readInt reads field i (0-based, whitespace-separated) of the file at
// root/rel as an integer.
func readInt(root, rel string, i int) (int64, error) {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return 0, fmt.Errorf("host: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) <= i {
		return 0, fmt.Errorf("host: %s: %q has no field %d", rel, b, i)
	}
	n, err := strconv.ParseInt(f[i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("host: %s: %w", rel, err)
	}
	return n, nil
}

func reserveFileTable(root string, slots int, memoryBytes, processes, fds int64) (FileTable, int64, error) {
	ft, err := readFileTable(root)
	if err != nil {
		return ft, 0, err
	}
	want := ft.Required(slots, memoryBytes, processes, fds)
	if ft.Max >= want {
		return ft, ft.Max, nil
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/fs/file-max"), []byte(strconv.FormatInt(want, 10)), 0); err != nil {
		return ft, ft.Max, fmt.Errorf("host: fs.file-max is %d, but %d sandboxes could hold %d open files each (memory %d bytes, %d processes, %d descriptors) and leave the host fewer than its own %d: set fs.file-max to %d or more (sysctl -w fs.file-max=%d), or lower the ceilings: %w",
			ft.Max, slots, ft.SandboxFiles(memoryBytes, processes, fds), memoryBytes, processes, fds, ft.HostBudget, want, want, err)
	}
	return ft, want, nil
}
