package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
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
	// NotUTF8 says Name (and so Path) or LinkTarget held bytes that are
	// not UTF-8, each run of them replaced by one U+FFFD: not the real
	// name, and as a path it reaches another file or none.
	NotUTF8 bool
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
	// the exec for Signal, KillExec and ExecCPU. The program reads
	// req.Stdin, then stdin until its EOF when stdin is not nil, then
	// EOF. Cancelling ctx kills the exec's processes. It returns the CPU
	// time the exec's processes used (ExecCPU's), also with an error.
	RunExec(ctx context.Context, id string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, CPUTime, error)
	// ExecCPU returns the CPU time that the processes of the running exec
	// id have used so far: its own, never the sandbox's other execs' (the
	// exec's cgroup: every process it started, ended or daemon). ok is
	// false when id is not running.
	ExecCPU(id string) (_ CPUTime, ok bool, _ error)
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
	// Move renames source to destination, never following a final
	// symlink of either; without overwrite an existing destination is
	// fs.ErrExist (syscall.EEXIST).
	Move(ctx context.Context, source, destination string, overwrite bool) error

	// Usage reads the sandbox's cgroup.
	Usage() (cgroup.Usage, error)
	// Sample records the pids count for a peak the cgroup cannot keep.
	Sample()
	// ServeBroker serves the host proxy to the worker (an exec with
	// Kubernetes or Prometheus access) and returns its broker stream:
	// served on the first call, the same stream on every later one (the
	// worker runs one proxy per sandbox, and a stream takes one
	// connection).
	ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error)
	// Exited reports whether the worker has exited: the sandbox can
	// serve nothing more.
	Exited() bool
	// WorkerDone is closed once the worker has exited (Exited).
	WorkerDone() <-chan struct{}
	// Kill kills every process of the sandbox, the worker included.
	Kill() error
	// Close destroys the sandbox: processes, cgroup, mounts, host
	// directory, uid range. Idempotent.
	Close() error
}

// CPUTime is CPU time, user and system, in µs.
type CPUTime struct {
	UserMicros, SystemMicros int64
}

// SandboxBackend starts real sandboxes (sandbox.Start with
// Spec.Session) with Config.
type SandboxBackend struct {
	// Config configures every sandbox; it must stay unchanged while the
	// backend lives.
	Config *sandbox.Config
	// Metrics counts the start-ups (path "session"); nil = none.
	Metrics *metrics.Metrics
}

// Start starts a session sandbox of spec. A spec with fewer file
// descriptors than sandbox.MinSessionFileDescriptors (the worker sets its
// execs' RLIMIT_NOFILE on itself) is a *FieldError of
// limits.max_file_descriptors.
func (b SandboxBackend) Start(ctx context.Context, spec sandbox.Spec) (Box, error) {
	spec.Session = true
	t := time.Now()
	sb, err := sandbox.Start(ctx, b.Config, spec)
	if err != nil {
		b.Metrics.SandboxStarted(metrics.PathSession, time.Since(t), nil, err)
		if errors.Is(err, sandbox.ErrFileDescriptors) {
			return nil, &FieldError{Field: "limits.max_file_descriptors",
				Reason: fmt.Sprintf("%d: a session sandbox needs at least %d", spec.FileDescriptors, sandbox.MinSessionFileDescriptors)}
		}
		return nil, err
	}
	// No exec runs yet: the sandbox waits at the background CPU weight.
	if err := sb.SetBackground(true); err != nil {
		b.Metrics.CgroupFailed(err)
		b.Metrics.SandboxStarted(metrics.PathSession, time.Since(t), nil, err)
		if cerr := sb.Close(); cerr != nil {
			b.Metrics.SandboxClosed(cerr)
		}
		return nil, err
	}
	b.Metrics.SandboxStarted(metrics.PathSession, time.Since(t), sb.StartPhases(), nil)
	return &sandboxBox{Sandbox: sb, metrics: b.Metrics, execs: map[string]*sandbox.Exec{}}, nil
}

// sandboxBox is a session *sandbox.Sandbox as a Box: its execs run at
// once, each in its own process group and cgroup (sandbox.Sandbox.Exec),
// and its file calls are the mechanism's, resolved by the worker inside
// the sandbox's root.
//
// While no exec runs, the sandbox holds the background CPU weight
// (sandbox.Sandbox.SetBackground): an idle session sandbox takes no
// execution slot, so the processes its execs left running (daemons,
// background jobs) must not compete as equals with the executions the
// slots admit: ten idle sandboxes spinning weigh as much as one running
// execution (10 × 10 against 100), not ten times as much. A running exec
// brings its sandbox back to the default weight.
type sandboxBox struct {
	*sandbox.Sandbox
	metrics *metrics.Metrics

	mu     sync.Mutex
	execs  map[string]*sandbox.Exec // running, by the session exec's id
	active int                      // RunExec calls in progress

	brokerMu sync.Mutex
	brokerID uint32 // the host proxy's broker stream; 0: not served
}

func (b *sandboxBox) ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error) {
	b.brokerMu.Lock()
	defer b.brokerMu.Unlock()
	if b.brokerID != 0 {
		return b.brokerID, nil
	}
	id, err := b.Sandbox.ServeBroker(register, extra...)
	if err != nil {
		return 0, err
	}
	b.brokerID = id
	return id, nil
}

// begin counts an exec in: the first brings the sandbox to the default
// CPU weight before its program starts. Errors are sandbox.ErrClosed and
// *sandbox.CgroupError.
func (b *sandboxBox) begin() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active == 0 {
		if err := b.SetBackground(false); err != nil {
			b.metrics.CgroupFailed(err)
			return err
		}
	}
	b.active++
	return nil
}

// end counts an exec out: the last puts the sandbox back at the
// background weight. A failed write is counted (metrics) and leaves the
// default weight: the sandbox competes as a running one does.
func (b *sandboxBox) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active--
	if b.active == 0 {
		// ErrClosed: the sandbox is going, and its weight with it.
		if err := b.SetBackground(true); err != nil && !errors.Is(err, sandbox.ErrClosed) {
			b.metrics.CgroupFailed(err)
		}
	}
}

func (b *sandboxBox) RunExec(ctx context.Context, id string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, CPUTime, error) {
	if err := b.begin(); err != nil {
		return nil, CPUTime{}, mechanismError(err)
	}
	// Deferred first, so it runs last: after the exec's processes are
	// gone and before its result is published.
	defer b.end()
	e, err := b.Exec(ctx, sandbox.ExecRequest{Run: req, StdinOpen: stdin != nil})
	if err != nil {
		return nil, CPUTime{}, mechanismError(err)
	}
	b.mu.Lock()
	b.execs[id] = e
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.execs, id)
		b.mu.Unlock()
	}()
	if stdin != nil {
		// Ends when stdin does (the session's pipe ends with the exec at
		// the latest) or once the exec refuses more (it has ended).
		go func() {
			buf := make([]byte, sandbox.ChunkBytes)
			for {
				n, rerr := stdin.Read(buf)
				if n > 0 && e.WriteStdin(buf[:n]) != nil {
					return
				}
				if rerr != nil {
					_ = e.CloseStdin()
					return
				}
			}
		}()
	}
	exit, err := e.Wait(onEvent)
	u := e.Usage() // final once Wait has returned
	cpu := CPUTime{UserMicros: u.CPUUserMicros, SystemMicros: u.CPUSystemMicros}
	if err != nil {
		return nil, cpu, mechanismError(err)
	}
	return exit, cpu, nil
}

func (b *sandboxBox) ExecCPU(id string) (CPUTime, bool, error) {
	e := b.running(id)
	if e == nil {
		return CPUTime{}, false, nil
	}
	user, sys, err := e.CPU()
	if err != nil {
		return CPUTime{}, true, err
	}
	return CPUTime{UserMicros: user, SystemMicros: sys}, true, nil
}

// running returns the running exec id, or nil.
func (b *sandboxBox) running(id string) *sandbox.Exec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.execs[id]
}

func (b *sandboxBox) Signal(id string, sig syscall.Signal) error {
	e := b.running(id)
	if e == nil {
		return ErrExecNotRunning
	}
	switch err := e.Signal(sig); {
	case errors.Is(err, sandbox.ErrExecEnded):
		return ErrExecNotRunning
	case errors.Is(err, sandbox.ErrInvalidSignal):
		return &FieldError{Field: "signal", Reason: err.Error()}
	default:
		return err
	}
}

// KillExec kills the exec's whole cgroup (daemons included); one not
// running has nothing to kill.
func (b *sandboxBox) KillExec(id string) error {
	if e := b.running(id); e != nil {
		return e.Kill()
	}
	return nil
}

func (b *sandboxBox) Upload(ctx context.Context, p string, mode uint32, r io.Reader) (int64, error) {
	n, err := b.Sandbox.Upload(ctx, p, mode, r)
	return n, mechanismError(err)
}

func (b *sandboxBox) Download(ctx context.Context, p string) (FileInfo, io.ReadCloser, error) {
	r, err := b.Sandbox.Download(ctx, p)
	if err != nil {
		return FileInfo{}, nil, mechanismError(err)
	}
	return boxFileInfo(p, r.Info()), r, nil
}

func (b *sandboxBox) List(ctx context.Context, dir string, max int) ([]FileInfo, int64, error) {
	l, err := b.Sandbox.List(ctx, dir, max)
	if err != nil {
		return nil, 0, mechanismError(err)
	}
	out := make([]FileInfo, len(l.Entries))
	for i, e := range l.Entries {
		out[i] = boxFileInfo(path.Join(dir, e.Name), e)
	}
	return out, l.TotalEntries, nil
}

func (b *sandboxBox) Stat(ctx context.Context, p string) (FileInfo, bool, error) {
	fi, ok, err := b.Sandbox.Stat(ctx, p)
	if err != nil || !ok {
		return FileInfo{}, false, mechanismError(err)
	}
	return boxFileInfo(p, fi), true, nil
}

func (b *sandboxBox) Remove(ctx context.Context, p string, recursive bool) error {
	return mechanismError(b.Sandbox.Remove(ctx, p, recursive))
}

func (b *sandboxBox) Mkdir(ctx context.Context, p string, mode uint32, parents bool) error {
	return mechanismError(b.Sandbox.Mkdir(ctx, p, mode, parents))
}

func (b *sandboxBox) Move(ctx context.Context, source, destination string, overwrite bool) error {
	return mechanismError(b.Sandbox.Move(ctx, source, destination, overwrite))
}

// boxFileInfo is the mechanism's description of the file at p.
func boxFileInfo(p string, fi sandbox.FileInfo) FileInfo {
	t := TypeOther
	switch fi.Type {
	case sandbox.FileTypeFile:
		t = TypeFile
	case sandbox.FileTypeDirectory:
		t = TypeDirectory
	case sandbox.FileTypeSymlink:
		t = TypeSymlink
	}
	return FileInfo{Name: path.Base(p), Path: p, Size: fi.Size, Type: t, Mode: fi.Mode, ModTime: fi.ModTime, LinkTarget: fi.SymlinkTarget, NotUTF8: fi.NotUTF8}
}

// mechanismErrnos are the errnos the Box contract names for the
// mechanism's sentinels (FileError's Err: compared with errors.Is).
var mechanismErrnos = []struct {
	sentinel error
	errno    syscall.Errno
}{
	{sandbox.ErrNotExist, syscall.ENOENT},
	{sandbox.ErrExist, syscall.EEXIST},
	{sandbox.ErrPermission, syscall.EACCES},
	{sandbox.ErrNoSpace, syscall.ENOSPC},
	{sandbox.ErrNotDirectory, syscall.ENOTDIR},
	{sandbox.ErrIsDirectory, syscall.EISDIR},
	{sandbox.ErrNotEmpty, syscall.ENOTEMPTY},
	{sandbox.ErrBusy, syscall.EBUSY},
}

// mechanismError is the mechanism's err as the Box contract says it: its
// sentinels also match their errno; an invalid path is a *FieldError of
// "path"; a closed sandbox is ErrNotReady. nil stays nil.
func mechanismError(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, sandbox.ErrInvalidPath):
		return &FieldError{Field: "path", Reason: err.Error()}
	case errors.Is(err, sandbox.ErrClosed):
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	for _, m := range mechanismErrnos {
		if errors.Is(err, m.sentinel) {
			return errnoError{err: err, errno: m.errno}
		}
	}
	return err
}

// errnoError is a mechanism's error that also matches errno.
type errnoError struct {
	err   error
	errno syscall.Errno
}

func (e errnoError) Error() string   { return e.err.Error() }
func (e errnoError) Unwrap() []error { return []error{e.err, e.errno} }
