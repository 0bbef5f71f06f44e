package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/pool"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Sandbox configures sandboxes (worker binary, cgroups, uid ranges).
	Sandbox sandbox.Config
	// MaxConcurrent is how many executions run at once; 0 = number of CPUs.
	MaxConcurrent int
	// QueueSize is how many executions may wait; 0 = 1000.
	QueueSize int
	// WarmPool is how many sandboxes are kept started ahead of demand, with
	// the default limits; 0 = none. Sandbox.IDs needs a uid range for each
	// of them besides the MaxConcurrent running ones.
	WarmPool int
	// SandboxReuse is how many executions one warm sandbox may serve, with
	// a Reset between them (Sandbox.Reset says what a reset guarantees);
	// 0 or 1 = single-use. Above 1 it needs WarmPool: reset sandboxes go
	// back to the pool. Executions that do not end by their program's own
	// exit (timeout, cancel, OOM kill, signal...) never leave their sandbox
	// for another.
	SandboxReuse int
	// DefaultRuntime runs requests that name none; "" = goja.
	DefaultRuntime string
	// Defaults and Ceilings bound requests' ResourceLimits; zero values =
	// DefaultLimits and DefaultCeilings.
	Defaults, Ceilings Limits
	// Registry configures retention of finished executions.
	Registry registry.Config
	// MaxLongPoll bounds GetExecution(wait=true) when the call has no
	// deadline; 0 = 60 s.
	MaxLongPoll time.Duration
	// Node configures the node runtime; nil = no runtime bundle, and
	// requests for node get UNIMPLEMENTED. NodeRuntime fills it.
	Node *node.Config
	// Kube and Prometheus are the targets of the credential-free proxy
	// (nil: not configured). Either one needs Sandbox.Broker.
	Kube       *hostproxy.Kube
	Prometheus *hostproxy.Prometheus
	// Cache stores successful new TypeScript/JavaScript scripts and serves
	// ExecuteRequest.cached, ListCache and ClearCache; nil disables it.
	Cache *cache.Cache
	// Layers are the isolation layers reported by HealthCheck.
	Layers []*sandboxv1.IsolationLayer
	// Version is reported by HealthCheck.
	Version string
	// Logger receives the supervisor's logs; nil = hclog default.
	Logger hclog.Logger
	// Metrics receives the supervisor's metrics (executions, sandbox
	// start-ups, load, gRPC calls through ListenAndServe); nil = none.
	// One Metrics serves one Server.
	Metrics *metrics.Metrics
}

// Server implements prodisco.sandbox.v1.SandboxService.
type Server struct {
	sandboxv1.UnimplementedSandboxServiceServer

	cfg    Config
	reg    *registry.Registry
	sched  *scheduler.Scheduler
	health *health.Server
	log    hclog.Logger

	runCtx    context.Context // cancelled when Shutdown's grace ends
	killAll   context.CancelFunc
	stopSweep context.CancelFunc

	runs sync.Map   // execution id -> *run, while in flight
	pool *pool.Pool // nil without a warm pool

	mu      sync.Mutex
	closing bool
	running sync.WaitGroup
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
		cfg.MaxConcurrent = defaultConcurrency()
	}
	if cfg.Defaults == (Limits{}) {
		cfg.Defaults = DefaultLimits
	}
	if cfg.Ceilings == (Limits{}) {
		cfg.Ceilings = DefaultCeilings
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
	if _, err := resolveLimits(nil, nil, cfg.Defaults, cfg.Ceilings); err != nil {
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
	s.runCtx, s.killAll = context.WithCancel(context.Background())
	var sweepCtx context.Context
	sweepCtx, s.stopSweep = context.WithCancel(context.Background())
	go func() { _ = s.reg.Run(sweepCtx) }()
	if cfg.SandboxReuse < 0 {
		return nil, fmt.Errorf("supervisor: sandbox reuse %d: want 1 (single-use) or more", cfg.SandboxReuse)
	}
	if cfg.SandboxReuse > 1 && cfg.WarmPool <= 0 {
		return nil, errors.New("supervisor: sandbox reuse needs a warm pool (--warm-pool): reset sandboxes go back to it")
	}
	if cfg.WarmPool > 0 {
		spec := specFor(cfg.Defaults)
		// A warm sandbox also holds a prepared goja runtime process with
		// the default limits, so that a default goja request starts no
		// process at all.
		shape, err := program.Build(program.Input{Runtime: program.Goja, Code: "0"})
		if err != nil {
			return nil, fmt.Errorf("supervisor: warm pool: %w", err)
		}
		shape.Program = nil
		shape.Rlimits = rlimitsFor(cfg.Defaults)
		s.pool = pool.New(cfg.WarmPool, cfg.SandboxReuse, spec,
			func(ctx context.Context) (*sandbox.Sandbox, error) {
				return s.startSandbox(ctx, metrics.PathWarmPool, spec)
			},
			func(ctx context.Context, sb *sandbox.Sandbox) error { return sb.Prepare(ctx, shape) },
			cfg.Logger.Named("pool"))
	}
	if err := cfg.Metrics.RegisterLoad(s.load); err != nil {
		return nil, fmt.Errorf("supervisor: metrics: %w", err)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(sandboxv1.SandboxService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// startSandbox starts a sandbox for path (metrics.PathWarmPool,
// metrics.PathOnDemand) and counts the start-up. Warm-pool sandboxes start
// in the background (sandbox.StartInBackground): a refill must not slow
// the execution that took the sandbox it replaces.
func (s *Server) startSandbox(ctx context.Context, path string, spec sandbox.Spec) (*sandbox.Sandbox, error) {
	t := time.Now()
	start := sandbox.Start
	if path == metrics.PathWarmPool {
		start = sandbox.StartInBackground
	}
	sb, err := start(ctx, &s.cfg.Sandbox, spec)
	s.cfg.Metrics.SandboxStarted(path, time.Since(t), err)
	return sb, err
}

// load is what a metrics scrape reads: the queue, the warm pool and the
// host proxy's counts.
func (s *Server) load() metrics.Load {
	var l metrics.Load
	l.Running, l.Queued = s.sched.Counts()
	if s.pool != nil {
		ps := s.pool.Stats()
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
// their sandboxes to be destroyed. It returns an error when executions had
// to be killed.
func (s *Server) Shutdown(grace time.Duration) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.health.Shutdown()
	for _, info := range s.reg.List([]registry.State{registry.StatePending}, 0, 0) {
		if e, err := s.reg.Get(info.ID); err == nil {
			_, _ = e.Cancel()
		}
	}
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(grace):
		err = errors.New("supervisor: grace period over, running executions killed")
		// Stop each run as cancelled (killing its sandbox) so that it
		// ends CANCELLED rather than as a worker lost to the context.
		s.runs.Range(func(_, v any) bool {
			v.(*run).stop(registry.ReasonCancelled)
			return true
		})
		s.killAll()
		<-done
	}
	s.killAll()
	s.stopSweep()
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// admit registers the start of an execution goroutine unless closing.
func (s *Server) admit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return status.Error(codes.Unavailable, "supervisor is shutting down")
	}
	s.running.Add(1)
	return nil
}
