package sandbox

import (
	"errors"
	"fmt"
)

// Errors of session sandboxes (Exec, the file calls). The worker answers
// with gRPC codes and a reason (worker/plugin.ErrorDomain); sessionError
// maps them to these in one place. Suggested gRPC status of each for the
// public API in brackets (DESIGN.md's table).
var (
	// ErrNotSession: Exec or a file call on a single-use sandbox, or Run,
	// Prepare or Reset on a session one. [FAILED_PRECONDITION]
	ErrNotSession = errors.New("sandbox: not a session sandbox")
	// ErrClosed: the sandbox is closed, or its worker is gone.
	// [NOT_FOUND for a sandbox a caller names; UNAVAILABLE otherwise]
	ErrClosed = errors.New("sandbox: closed")
	// ErrTooManyExecs: MaxConcurrentExecs execs run already.
	// [RESOURCE_EXHAUSTED]
	ErrTooManyExecs = errors.New("sandbox: too many execs running at once")
	// ErrExecEnded: stdin or a signal for an exec that has ended.
	// [FAILED_PRECONDITION]
	ErrExecEnded = errors.New("sandbox: the exec has ended")
	// ErrFileDescriptors: a session sandbox, or one of its execs, with an
	// RLIMIT_NOFILE below MinSessionFileDescriptors. [INVALID_ARGUMENT,
	// naming limits.max_file_descriptors]
	ErrFileDescriptors = errors.New("sandbox: a session sandbox needs more file descriptors")
	// ErrInvalidSignal: a signal outside 1..31. [INVALID_ARGUMENT]
	ErrInvalidSignal = errors.New("sandbox: invalid signal")
	// ErrInvalidPath: a path with a NUL byte, longer than 4095 bytes,
	// climbing above the root with "..", or the root where a file is
	// needed; also a listing's max_entries out of range.
	// [INVALID_ARGUMENT]
	ErrInvalidPath = errors.New("sandbox: invalid path")
	// ErrNotExist: no such file or directory. [NOT_FOUND]
	ErrNotExist = errors.New("sandbox: no such file or directory")
	// ErrExist: the file exists (Mkdir without parents). [ALREADY_EXISTS]
	ErrExist = errors.New("sandbox: file exists")
	// ErrPermission: the sandbox user may not do it (a read-only file
	// system, a mode), or the path goes through a /proc magic link
	// (/proc/PID/fd/N, /proc/PID/root) or a loop of symbolic links.
	// [PERMISSION_DENIED]
	ErrPermission = errors.New("sandbox: permission denied")
	// ErrNoSpace: the sandbox's file system (the workspace tmpfs) or its
	// file size limit is full; an upload that hits it leaves no file.
	// [RESOURCE_EXHAUSTED]
	ErrNoSpace = errors.New("sandbox: no space left")
	// ErrNotDirectory: a directory was needed (a path component, a
	// listing). [FAILED_PRECONDITION]
	ErrNotDirectory = errors.New("sandbox: not a directory")
	// ErrIsDirectory: a file was needed (a download, an upload's target).
	// [FAILED_PRECONDITION]
	ErrIsDirectory = errors.New("sandbox: is a directory")
	// ErrNotEmpty: removing a non-empty directory without recursive.
	// [FAILED_PRECONDITION]
	ErrNotEmpty = errors.New("sandbox: directory not empty")
	// ErrNotRegular: a download of a FIFO, socket or device.
	// [FAILED_PRECONDITION]
	ErrNotRegular = errors.New("sandbox: not a regular file")
	// ErrBusy: a mount point (removing /workspace itself), a tree that
	// crosses into another mount, is deeper than 524288 levels or changes
	// while removed, or a program being executed. [FAILED_PRECONDITION]
	ErrBusy = errors.New("sandbox: busy, another mount or too deep")
)

// FileError is a failed file call: Op on Path, Err one of the sentinels
// above (or the worker's error when none fits), Detail what the worker
// said (its errno).
type FileError struct {
	Op     string
	Path   string
	Err    error
	Detail string
}

func (e *FileError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("sandbox: %s %s: %s", e.Op, e.Path, e.Detail)
	}
	return fmt.Sprintf("sandbox: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Operations on a sandbox's cgroup that a CgroupError names.
const (
	CgroupCreate = "create" // make it and write its limits (Start)
	CgroupRead   = "read"   // read its usage (Usage)
	CgroupWrite  = "write"  // change a session sandbox's CPU weight (SetBackground)
	CgroupRemove = "remove" // delete it (Close)
)

// CgroupError is a failure of an operation on a sandbox's cgroup, which
// the supervisor counts apart (metrics): a host whose cgroups fail cannot
// run sandboxes safely.
type CgroupError struct {
	// Op is CgroupCreate, CgroupRead, CgroupWrite or CgroupRemove.
	Op string
	// Err is the cgroup package's error.
	Err error
}

func (e *CgroupError) Error() string { return fmt.Sprintf("sandbox: %s cgroup: %v", e.Op, e.Err) }

// Unwrap returns the cgroup package's error.
func (e *CgroupError) Unwrap() error { return e.Err }
