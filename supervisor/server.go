package supervisor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// Server implements prodisco.sandbox.v1.SandboxService.
type Server struct {
	sandboxv1.UnimplementedSandboxServiceServer

	cfg    Config
	reg    *registry.Registry
	sched  *scheduler.Scheduler
	runner *execution.Runner
	health *health.Server
	log    hclog.Logger

	stopSweep context.CancelFunc
}

// New returns a Server ready to Register. It starts the registry's
// retention sweeper; Shutdown stops it.
func New(cfg Config) (*Server, error) {
	switch cfg.DefaultRuntime {
	case "":
		cfg.DefaultRuntime = program.Goja
	case program.Goja, program.Node, program.Shell, program.Python:
	default:
		return nil, fmt.Errorf("supervisor: unknown default runtime %q (goja, node, shell, python)", cfg.DefaultRuntime)
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 1000
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = runtime.NumCPU()
	}
	if cfg.Defaults == (limits.Set{}) {
		cfg.Defaults = limits.Default()
	}
	if cfg.Ceilings == (limits.Set{}) {
		cfg.Ceilings = limits.DefaultCeilings()
	}
	if (cfg.Kube != nil || cfg.Prometheus != nil) && !cfg.Sandbox.Broker {
		return nil, errors.New("supervisor: Kube/Prometheus need Sandbox.Broker")
	}
	if cfg.MaxLongPoll <= 0 {
		cfg.MaxLongPoll = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: hclog.Info})
	}
	if err := cfg.Sandbox.Validate(); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if _, err := limits.Resolve(nil, nil, cfg.Defaults, cfg.Ceilings); err != nil {
		return nil, fmt.Errorf("supervisor: default limits: %w", err)
	}
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: cfg.MaxConcurrent, QueueSize: cfg.QueueSize})
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if m := cfg.Metrics; m != nil {
		next := cfg.Registry.OnFinish
		cfg.Registry.OnFinish = func(meta registry.Meta, res registry.Result) {
			m.ExecutionFinished(meta.Runtime, res.State.String(), res.Reason.String(),
				time.Duration(res.QueueWaitMs)*time.Millisecond, time.Duration(res.Usage.WallMs)*time.Millisecond)
			if next != nil {
				next(meta, res)
			}
		}
	}
	s := &Server{cfg: cfg, reg: registry.New(cfg.Registry), sched: sched, health: health.NewServer(), log: cfg.Logger}
	var sweepCtx context.Context
	sweepCtx, s.stopSweep = context.WithCancel(context.Background())
	go func() { _ = s.reg.Run(sweepCtx) }()
	if cfg.SandboxReuse < 0 {
		return nil, fmt.Errorf("supervisor: sandbox reuse %d: want 1 (single-use) or more", cfg.SandboxReuse)
	}
	if cfg.SandboxReuse > 1 && cfg.WarmPool <= 0 {
		return nil, errors.New("supervisor: sandbox reuse needs a warm pool (--warm-pool): reset sandboxes go back to it")
	}
	s.runner, err = execution.New(execution.Config{
		Sandbox: &s.cfg.Sandbox, WarmPool: cfg.WarmPool, SandboxReuse: cfg.SandboxReuse, Defaults: cfg.Defaults,
		Registry: s.reg, Scheduler: sched, Cache: cfg.Cache, Node: cfg.Node, Kube: cfg.Kube, Prometheus: cfg.Prometheus,
		Metrics: cfg.Metrics, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if err := cfg.Metrics.RegisterLoad(s.load); err != nil {
		return nil, fmt.Errorf("supervisor: metrics: %w", err)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(sandboxv1.SandboxService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// load is what a metrics scrape reads: the queue, the warm pool and the
// host proxy's counts.
func (s *Server) load() metrics.Load {
	var l metrics.Load
	l.Running, l.Queued = s.sched.Counts()
	if ps, ok := s.runner.PoolStats(); ok {
		l.PoolSize, l.PoolReady, l.PoolStarting, l.PoolInUse = ps.Size, ps.Ready, ps.Starting, ps.InUse
	}
	add := func(target string) func(kind, outcome string, n int64) {
		return func(kind, outcome string, n int64) {
			l.Proxy = append(l.Proxy, metrics.ProxyCount{Target: target, Kind: kind, Outcome: outcome, N: n})
		}
	}
	if s.cfg.Kube != nil {
		s.cfg.Kube.Counts.Each(add("kubernetes"))
	}
	if s.cfg.Prometheus != nil {
		s.cfg.Prometheus.Counts.Each(add("prometheus"))
	}
	return l
}

// Register registers the sandbox service, grpc.health.v1 and server
// reflection on g.
func (s *Server) Register(g *grpc.Server) {
	sandboxv1.RegisterSandboxServiceServer(g, s)
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
}

// Registry returns the execution registry (for tests and metrics).
func (s *Server) Registry() *registry.Registry { return s.reg }

// Shutdown refuses new executions, cancels queued ones, waits up to grace
// for running ones, then kills the rest (they end CANCELLED) and waits for
// their sandboxes to be destroyed (execution.Runner.Shutdown). It returns
// an error when executions had to be killed.
func (s *Server) Shutdown(grace time.Duration) error {
	s.health.Shutdown()
	err := s.runner.Shutdown(grace)
	s.stopSweep()
	return err
}
