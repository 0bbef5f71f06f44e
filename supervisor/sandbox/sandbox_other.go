//go:build !linux

package sandbox

import (
	"context"
	"fmt"

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

func (s *Sandbox) Foreground() error  { return nil }
func (s *Sandbox) ID() string         { return "" }
func (s *Sandbox) HostUID() uint32    { return 0 }
func (s *Sandbox) CgroupPath() string { return "" }
func (s *Sandbox) Kill() error        { return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported) }
func (s *Sandbox) Close() error       { return nil }
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
func (s *Sandbox) ServeBroker(register func(*grpc.Server)) (uint32, error) {
	return 0, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

// Prepare is not supported off Linux.
func (s *Sandbox) StartPhases() []Phase { return nil }
func (s *Sandbox) Uses() int            { return 0 }
func (s *Sandbox) Exited() bool         { return false }
func (s *Sandbox) Sample()              {}
func (s *Sandbox) Reset(ctx context.Context) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) WorkerPhases(ctx context.Context) ([]Phase, error) {
	return nil, fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}
func (s *Sandbox) Prepare(ctx context.Context, req *workerv1.RunRequest) error {
	return fmt.Errorf("sandbox: %w", isolation.ErrNotSupported)
}

func processFDs() []int { return nil }
