package session

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Backend starts session sandboxes: the mechanism (supervisor/sandbox)
// seen from a session. SandboxBackend is the real one; tests use fakes.
type Backend interface {
	// Start starts a sandbox of spec and returns it once it serves. On
	// error nothing of it is left.
	Start(ctx context.Context, spec sandbox.Spec) (Box, error)
}

// FileType is what a path is; symlinks are never followed.
type FileType int

// File types; the numbering matches execfarm.v1.FileType.
const (
	TypeFile FileType = iota + 1
	TypeDirectory
	TypeSymlink
	TypeOther // FIFO, socket, device node
)

// FileInfo describes a path inside a sandbox.
type FileInfo struct {
	// Name is the base name; Path the absolute path in the sandbox.
	Name, Path string
	// Size is in bytes.
	Size int64
	Type FileType
	// Mode is the permission bits (with setuid, setgid, sticky), as in
	// chmod.
	Mode uint32
	// ModTime is the modification time.
	ModTime time.Time
	// LinkTarget is a symlink's target as written, never resolved.
	LinkTarget string
}

// Box is one live sandbox as a session drives it. Paths are absolute
// paths inside the sandbox (ResolvePath made them so); the mechanism
// resolves them inside the sandbox's own root, never following a symlink
// out of it. Its methods are safe for concurrent use; Close ends every
// call in flight.
type Box interface {
	// ID names the sandbox ("sb-" and 16 hex digits).
	ID() string
	// HostUID is the first host uid of its id range.
	HostUID() uint32
	// RunExec runs one exec's program (req) and calls onEvent for its
	// output, in order, until it exits (sandbox.Sandbox.Run). id names
	// the exec for Signal and KillExec. The program reads req.Stdin, then
	// stdin until its EOF when stdin is not nil, then EOF. Cancelling ctx
	// kills the exec's processes.
	RunExec(ctx context.Context, id string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error)
	// Signal sends sig to a running exec's processes
	// (ErrExecNotRunning when it is not running).
	Signal(id string, sig syscall.Signal) error
	// KillExec kills every process of a running exec and does not wait.
	KillExec(id string) error

	// Upload writes r's bytes to path (mode's permission bits, parents
	// created), all or nothing: on any error no file is left at path.
	// It returns the bytes written. A file larger than the workspace's
	// room fails with syscall.ENOSPC.
	Upload(ctx context.Context, path string, mode uint32, r io.Reader) (int64, error)
	// Download opens the regular file at path for reading.
	Download(ctx context.Context, path string) (FileInfo, io.ReadCloser, error)
	// List returns at most max entries of the directory at path, sorted
	// by name, and how many it holds.
	List(ctx context.Context, path string, max int) ([]FileInfo, int64, error)
	// Stat describes path; exists is false (and err nil) when it does
	// not exist.
	Stat(ctx context.Context, path string) (info FileInfo, exists bool, err error)
	// Remove removes path (a directory only when empty, or recursive).
	Remove(ctx context.Context, path string, recursive bool) error
	// Mkdir creates the directory path; with parents, missing parents
	// too and an existing directory is no error.
	Mkdir(ctx context.Context, path string, mode uint32, parents bool) error

	// Usage reads the sandbox's cgroup.
	Usage() (cgroup.Usage, error)
	// Sample records the pids count for a peak the cgroup cannot keep.
	Sample()
	// ServeBroker serves the host proxy to the worker (an exec with
	// Kubernetes or Prometheus access).
	ServeBroker(register func(*grpc.Server)) (uint32, error)
	// Exited reports whether the worker has exited: the sandbox can
	// serve nothing more.
	Exited() bool
	// Kill kills every process of the sandbox, the worker included.
	Kill() error
	// Close destroys the sandbox: processes, cgroup, mounts, host
	// directory, uid range. Idempotent.
	Close() error
}

// SandboxBackend starts real sandboxes (sandbox.Start) with Config.
type SandboxBackend struct {
	// Config configures every sandbox; it must stay unchanged while the
	// backend lives.
	Config *sandbox.Config
	// Metrics counts the start-ups (path "session"); nil = none.
	Metrics *metrics.Metrics
}

// Start starts a sandbox of spec.
func (b SandboxBackend) Start(ctx context.Context, spec sandbox.Spec) (Box, error) {
	t := time.Now()
	sb, err := sandbox.Start(ctx, b.Config, spec)
	if err != nil {
		b.Metrics.SandboxStarted(metrics.PathSession, time.Since(t), nil, err)
		return nil, err
	}
	b.Metrics.SandboxStarted(metrics.PathSession, time.Since(t), sb.StartPhases(), nil)
	return &sandboxBox{Sandbox: sb}, nil
}

// sandboxBox is a *sandbox.Sandbox as a Box. Its worker runs one program
// at a time: execs queue for it in order, and standard input, signals
// and file operations are not there yet (ErrUnsupported).
type sandboxBox struct {
	*sandbox.Sandbox
}

func (b *sandboxBox) RunExec(ctx context.Context, _ string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	if stdin != nil {
		return nil, fmt.Errorf("keep standard input open: %w", ErrUnsupported)
	}
	return b.Run(ctx, req, onEvent)
}

func (b *sandboxBox) Signal(string, syscall.Signal) error {
	return fmt.Errorf("signal an exec: %w", ErrUnsupported)
}

// KillExec does nothing: cancelling the exec's RunExec, which the run
// does right after, makes the worker kill its process group.
func (b *sandboxBox) KillExec(string) error { return nil }

func (b *sandboxBox) Upload(context.Context, string, uint32, io.Reader) (int64, error) {
	return 0, fmt.Errorf("upload: %w", ErrUnsupported)
}

func (b *sandboxBox) Download(context.Context, string) (FileInfo, io.ReadCloser, error) {
	return FileInfo{}, nil, fmt.Errorf("download: %w", ErrUnsupported)
}

func (b *sandboxBox) List(context.Context, string, int) ([]FileInfo, int64, error) {
	return nil, 0, fmt.Errorf("list files: %w", ErrUnsupported)
}

func (b *sandboxBox) Stat(context.Context, string) (FileInfo, bool, error) {
	return FileInfo{}, false, fmt.Errorf("stat: %w", ErrUnsupported)
}

func (b *sandboxBox) Remove(context.Context, string, bool) error {
	return fmt.Errorf("remove: %w", ErrUnsupported)
}

func (b *sandboxBox) Mkdir(context.Context, string, uint32, bool) error {
	return fmt.Errorf("mkdir: %w", ErrUnsupported)
}
