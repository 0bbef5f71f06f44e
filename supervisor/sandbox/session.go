package sandbox

import (
	"time"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// MaxConcurrentExecs is how many execs a session sandbox runs at once;
// Sandbox.Exec answers ErrTooManyExecs beyond it. Each exec costs its
// worker about six descriptors, three goroutines and up to 1.5 MiB of
// buffered stdin and output (charged to the sandbox); the sandbox's pids
// limit bounds all their processes together.
const MaxConcurrentExecs = plugin.MaxConcurrentExecs

// MinSessionFileDescriptors is the lowest RLIMIT_NOFILE a session
// sandbox takes (Spec.FileDescriptors, and the NOFILE rlimit of each
// exec): its worker sets the execs' rlimits on itself before it forks, and
// then needs descriptors for MaxConcurrentExecs execs (about six each),
// MaxConcurrentFileCalls file calls (about three each) and its own
// connections. Start and Exec refuse less with ErrFileDescriptors.
const MinSessionFileDescriptors = 256

// MaxConcurrentFileCalls is how many file calls (Upload, Download while
// open, List, Stat, Remove, Mkdir) one session sandbox serves at once;
// more wait for a turn, or their ctx's end.
const MaxConcurrentFileCalls = 16

// MaxConcurrentListings is how many of those file calls are List: a
// listing holds up to MaxListBytes in the worker (charged to the
// sandbox's memory, whose reserve for the worker is at most 32 MiB) and
// in the supervisor, so one at a time per sandbox; more wait their turn
// (holding no file call's turn meanwhile), or their ctx's end.
const MaxConcurrentListings = 1

// Bounds of the file calls.
const (
	// ChunkBytes is the size of the chunks Upload sends and the most a
	// download chunk holds.
	ChunkBytes = 64 << 10
	// DefaultListEntries and MaxListEntries bound List's maxEntries (0 =
	// DefaultListEntries); the listing holds at most that many entries.
	DefaultListEntries = 1000
	MaxListEntries     = 10000
	// MaxListBytes bounds what a listing holds, bytes: the worker sends,
	// and List keeps, entries while the sum of their paths (the listed
	// directory, "/" and the name) and symbolic link targets stays within
	// it, and reports the rest as Truncated (plugin.MaxListBytes). 10000
	// entries of long names and targets under a long directory come to
	// tens of MiB; 3 MiB also keeps the public ListFiles response (which
	// repeats each full path) under the 4 MiB gRPC clients accept by
	// default.
	MaxListBytes = plugin.MaxListBytes
)

// ExecRequest is one exec of a session sandbox.
type ExecRequest struct {
	// Run is what the worker starts, as for Sandbox.Run: argv, env, dir
	// (inside the sandbox; "" = /), program, rlimits, results. Run.Stdin
	// is the first bytes of the exec's stdin. ProxyBrokerId names the
	// sandbox's one Kubernetes/Prometheus proxy stream (ServeBroker once
	// per sandbox, the same id in every exec: the first exec starts the
	// proxy, which serves until the worker exits); SignalsReady is ignored (it serves Prepare), so a
	// request of runtime/program.Build runs as is. The rlimits are set on
	// the worker before it forks and cannot be raised again: give every
	// exec of a sandbox the same (those of its limits, as
	// limits.Set.Rlimits does), with NOFILE at least
	// MinSessionFileDescriptors.
	Run *workerv1.RunRequest
	// StdinOpen keeps stdin open after Run.Stdin for Exec.WriteStdin,
	// until Exec.CloseStdin; false: end of file after Run.Stdin.
	StdinOpen bool

	// inPayload runs the exec in the payload cgroup, without a cgroup of
	// its own (BenchmarkExec measures what its own costs).
	inPayload bool
}

// ExecUsage is what the kernel reports for one exec, from its own cgroup:
// CPU time (cpu.stat on v2, cpuacct on v1, where the exec has a cgroup in
// that hierarchy too: cgroup.Exec.CPU) of every process the exec started,
// daemons and processes that ended included, up to the exec's end, and
// pids.peak. What the kernel does not give per exec: peak memory and OOM
// kills are the sandbox's (Sandbox.Usage; the memory controller is on the
// sandbox's cgroup, not on each exec's), and ru_maxrss is meaningless for
// a process the worker forked (it starts at the worker's own resident
// set). An exec without a cgroup of its own (a benchmark's baseline) has
// wait4(2)'s CPU time of its runtime process and the descendants that
// process waited for.
type ExecUsage struct {
	// CPUUserMicros and CPUSystemMicros are CPU time in µs (Exec.CPU
	// reads them live).
	CPUUserMicros, CPUSystemMicros int64
	// PidsPeak is the most tasks the exec's cgroup held at once; 0 when
	// PidsPeakKnown is false (a kernel without pids.peak, Linux < 6.1).
	PidsPeak      int64
	PidsPeakKnown bool
}

// FileType is a file's type as lstat(2) sees it.
type FileType int

// File types.
const (
	FileTypeUnknown FileType = iota
	FileTypeFile
	FileTypeDirectory
	FileTypeSymlink
	// FileTypeOther is a FIFO, socket or device node.
	FileTypeOther
)

// String returns "file", "directory", "symlink", "other" (seed 001's
// words for the first two).
func (t FileType) String() string {
	switch t {
	case FileTypeFile:
		return "file"
	case FileTypeDirectory:
		return "directory"
	case FileTypeSymlink:
		return "symlink"
	case FileTypeOther:
		return "other"
	}
	return "unknown"
}

// FileInfo describes one file of a sandbox.
type FileInfo struct {
	// Name is the base name.
	Name string
	// Size is in bytes (of a symbolic link: its target's length).
	Size int64
	Type FileType
	// Mode is the permission bits with setuid, setgid and sticky (mode &
	// 07777).
	Mode uint32
	// ModTime is the last modification.
	ModTime time.Time
	// SymlinkTarget is a symbolic link's target as stored (Stat, List).
	SymlinkTarget string
	// NotUTF8 says Name or SymlinkTarget held bytes that are not UTF-8:
	// the worker replaced each run of them by one U+FFFD, so the text is
	// not the real one.
	NotUTF8 bool
}

// Listing is one directory listing: at most the maxEntries entries whose
// names come first in byte order, sorted so.
type Listing struct {
	Entries []FileInfo
	// TotalEntries is how many entries the directory holds ("." and ".."
	// left out); Truncated reports that it is more than were returned.
	TotalEntries int64
	Truncated    bool
}

// fileInfo converts the worker's FileInfo.
func fileInfo(fi *workerv1.FileInfo) FileInfo {
	return FileInfo{
		Name: fi.GetName(), Size: fi.GetSize(), Type: FileType(fi.GetType()), Mode: fi.GetMode(),
		ModTime: time.Unix(0, fi.GetModTimeUnixNano()), SymlinkTarget: fi.GetSymlinkTarget(),
		NotUTF8: fi.GetNotUtf8(),
	}
}
