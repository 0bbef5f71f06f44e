//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// Sandbox is one live sandbox; off Linux none can exist.
type Sandbox struct{}

// Start is not supported off Linux.
func Start(ctx context.Context, cfg *Config, spec Spec) (*Sandbox, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// StartForkServer is not supported off Linux.
func StartForkServer(cfg *Config) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// StartInBackground is not supported off Linux.
func StartInBackground(ctx context.Context, cfg *Config, spec Spec) (*Sandbox, error) {
	return Start(ctx, cfg, spec)
}

func (s *Sandbox) Foreground() error { return nil }
func (s *Sandbox) SetBackground(bool) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) ID() string         { return "" }
func (s *Sandbox) HostUID() uint32    { return 0 }
func (s *Sandbox) CgroupPath() string { return "" }
func (s *Sandbox) Kill() error        { return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported) }
func (s *Sandbox) Quiet() (bool, error) {
	return false, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Close() error { return nil }
func (s *Sandbox) Usage() (cgroup.Usage, error) {
	return cgroup.Usage{}, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Run(ctx context.Context, req *workerv1.RunRequest, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// ExpectedExit reports go-plugin log lines about a worker's exit, which
// every sandbox ends with; pass it as hclog.LoggerOptions.Exclude.
func ExpectedExit(_ hclog.Level, msg string, _ ...any) bool {
	return msg == "plugin process exited" || msg == "plugin failed to exit gracefully"
}

// ServeBroker is not supported off Linux.
func (s *Sandbox) ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error) {
	return 0, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// Prepare is not supported off Linux.
func (s *Sandbox) StartPhases() []Phase        { return nil }
func (s *Sandbox) Uses() int                   { return 0 }
func (s *Sandbox) Exited() bool                { return false }
func (s *Sandbox) WorkerDone() <-chan struct{} { return nil }
func (s *Sandbox) Sample()                     {}
func (s *Sandbox) Reset(ctx context.Context, quiet func()) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) WorkerPhases(ctx context.Context) ([]Phase, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Prepare(ctx context.Context, req *workerv1.RunRequest) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

func processFDs() []int { return nil }

// Exec is one exec of a session sandbox; off Linux none can exist.
type Exec struct{}

// Exec is not supported off Linux.
func (s *Sandbox) Exec(ctx context.Context, req ExecRequest) (*Exec, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) RunningExecs() int { return 0 }
func (s *Sandbox) Session() bool     { return false }
func (e *Exec) ID() string           { return "" }
func (e *Exec) Pid() int             { return 0 }
func (e *Exec) Usage() ExecUsage     { return ExecUsage{} }
func (e *Exec) CPU() (int64, int64, error) {
	return 0, 0, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (e *Exec) Wait(onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (e *Exec) WriteStdin(p []byte) error       { return ErrExecEnded }
func (e *Exec) CloseStdin() error               { return ErrExecEnded }
func (e *Exec) Signal(sig syscall.Signal) error { return ErrExecEnded }
func (e *Exec) Kill() error                     { return nil }

// FileReader is a download in progress; off Linux none can exist.
type FileReader struct{}

func (r *FileReader) Info() FileInfo                     { return FileInfo{} }
func (r *FileReader) Read(p []byte) (int, error)         { return 0, io.EOF }
func (r *FileReader) WriteTo(w io.Writer) (int64, error) { return 0, nil }
func (r *FileReader) Close() error                       { return nil }

// The file calls are not supported off Linux.
func (s *Sandbox) Upload(ctx context.Context, path string, mode uint32, r io.Reader) (int64, error) {
	return 0, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Download(ctx context.Context, path string) (*FileReader, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) List(ctx context.Context, path string, maxEntries int) (Listing, error) {
	return Listing{}, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Stat(ctx context.Context, path string) (FileInfo, bool, error) {
	return FileInfo{}, false, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Remove(ctx context.Context, path string, recursive bool) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Mkdir(ctx context.Context, path string, mode uint32, parents bool) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Move(ctx context.Context, source, destination string, overwrite bool) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// ForkServerCheck has no fork server to check off Linux.
func ForkServerCheck() error { return nil }
