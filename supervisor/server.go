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

	"github.com/execfarm/execfarm/isolation"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/profile"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/scheduler"
	"github.com/execfarm/execfarm/supervisor/session"
)

// Server implements prodisco.sandbox.v1.SandboxService, and
// execfarm.v1.SessionService through sessions.
type Server struct {
	sandboxv1.UnimplementedSandboxServiceServer

	cfg      Config
	reg      *registry.Registry
	sched    *scheduler.Scheduler
	budget   *budget.Budget // the node's memory budget, shared by sched and sessions
	runner   *execution.Runner
	sessions *session.Manager
	wire     wireCache // encodings of events shared by their subscribers
	health   *health.Server
	probes   probeState
	log      hclog.Logger
	ids      *nodeid.Issuer
	// defaults are the limits of a request that asks for none
	// (cfg.Defaults resolved: a default workspace fitted to the default
	// memory), the warm pool's.
	defaults limits.Set

	stopSweep context.CancelFunc
}

// New returns a Server ready to Register: cfg checked and completed with
// its defaults, the host's fs.file-max raised when it could not hold the
// files of every sandbox slot at the ceilings (host.ReserveFileTable) and
// its kernel.pty.max when it could not hold their pseudo-terminals
// (host.ReservePtys), the scheduler, registry and execution runner built,
// and, last, once nothing can fail any more, its goroutines started (the
// registry's retention sweeper, the warm pool's refill). Shutdown stops
// them. On error nothing is left running.
func New(cfg Config) (*Server, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	s, err := build(cfg)
	if err != nil {
		return nil, err
	}
	s.start()
	return s, nil
}

// complete checks c and fills in its defaults. It starts nothing.
func (c *Config) complete() error {
	switch c.DefaultRuntime {
	case "":
		c.DefaultRuntime = program.Goja
	case program.Goja, program.Node, program.Shell, program.Python:
	default:
		return fmt.Errorf("supervisor: unknown default runtime %q (goja, node, shell, python)", c.DefaultRuntime)
	}
	switch c.ErrorStyle {
	case "", ErrorStyleExecfarm, ErrorStyleProDisco:
	default:
		return fmt.Errorf("supervisor: unknown error style %q (%s, %s)", c.ErrorStyle, ErrorStyleExecfarm, ErrorStyleProDisco)
	}
	switch {
	case c.QueueSize == 0:
		c.QueueSize = 1000
	case c.QueueSize == NoQueue:
		c.QueueSize = 0
	case c.QueueSize < 0:
		return fmt.Errorf("supervisor: queue size %d: want 0 (1000), NoQueue (none) or more", c.QueueSize)
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = runtime.NumCPU()
	}
	if c.Defaults == (limits.Set{}) {
		c.Defaults = limits.Default()
	}
	if c.Ceilings == (limits.Set{}) {
		c.Ceilings = limits.DefaultCeilings()
	}
	if (c.Kube != nil || c.Prometheus != nil) && !c.Sandbox.Broker {
		return errors.New("supervisor: Kube/Prometheus need Sandbox.Broker")
	}
	if c.MaxLongPoll <= 0 {
		c.MaxLongPoll = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: hclog.Info})
	}
	if c.NodeName == "" {
		name, err := nodeid.HostNode()
		if err != nil {
			return fmt.Errorf("supervisor: this host's name cannot name the node (set the node name): %w", err)
		}
		c.NodeName = name
	}
	if c.SandboxReuse < 0 {
		return fmt.Errorf("supervisor: sandbox reuse %d: want 1 (single-use) or more", c.SandboxReuse)
	}
	if c.SandboxReuse > 1 && c.WarmPool <= 0 {
		return errors.New("supervisor: sandbox reuse needs a warm pool (--warm-pool): reset sandboxes go back to it")
	}
	if err := c.Sandbox.Validate(); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	c.Ceilings = hostCeilings(c.Ceilings, c.Logger)
	if err := c.memoryBudget(); err != nil {
		return err
	}
	if _, err := limits.Resolve(nil, nil, c.Defaults, c.Ceilings); err != nil {
		return fmt.Errorf("supervisor: default limits: %w", err)
	}
	// No set of sandboxes may fill the host's file table: fs.file-max is
	// raised to hold what every uid slot could open at the ceilings.
	before, now, err := host.ReserveFileTable(c.Sandbox.IDs.Slots(), c.Ceilings.MemoryBytes, int64(c.Ceilings.Processes), int64(c.Ceilings.FileDescriptors))
	switch {
	case errors.Is(err, isolation.ErrNotSupported):
	case err != nil:
		return fmt.Errorf("supervisor: %w", err)
	case now > before.Max:
		c.Logger.Info("raised fs.file-max: every sandbox's open files are bounded by its memory, and the host keeps its own budget",
			"from", before.Max, "to", now, "host_budget", before.HostBudget, "slots", c.Sandbox.IDs.Slots(),
			"files_per_sandbox", before.SandboxFiles(c.Ceilings.MemoryBytes, int64(c.Ceilings.Processes), int64(c.Ceilings.FileDescriptors)))
	}
	// Nor the host's pseudo-terminals: each sandbox's devpts holds at most
	// rootfs.PtysPerSandbox, and kernel.pty.max is raised to hold them all
	// beside the kernel's default share for the host's containers.
	ptys, ptyMax, err := host.ReservePtys(c.Sandbox.IDs.Slots())
	switch {
	case errors.Is(err, isolation.ErrNotSupported):
	case err != nil:
		return fmt.Errorf("supervisor: %w", err)
	case ptyMax > ptys.Max:
		c.Logger.Info("raised kernel.pty.max: every sandbox's pseudo-terminals are bounded, and the host's containers keep the kernel's default share",
			"from", ptys.Max, "to", ptyMax, "slots", c.Sandbox.IDs.Slots(), "ptys_per_sandbox", rootfs.PtysPerSandbox)
	}
	return nil
}

// memoryBudget fills in MemoryBudgetBytes (the host's default) and fits
// the memory ceiling (MaxMemoryBytes, else Ceilings.MemoryBytes) and the
// default memory limit within it.
func (c *Config) memoryBudget() error {
	if c.MemoryBudgetBytes < 0 || c.MaxMemoryBytes < 0 {
		return fmt.Errorf("supervisor: negative memory budget %d or memory ceiling %d", c.MemoryBudgetBytes, c.MaxMemoryBytes)
	}
	m, merr := host.ReadMemory("/")
	switch {
	case c.MemoryBudgetBytes == 0 && merr != nil:
		return fmt.Errorf("supervisor: default memory budget (set --memory-budget): %w", merr)
	case c.MemoryBudgetBytes == 0:
		c.MemoryBudgetBytes = m.DefaultBudgetBytes()
		if c.MemoryBudgetBytes < 1 {
			return fmt.Errorf("supervisor: default memory budget: %s available (MemTotal, or the supervisor's cgroup's memory limit) leaves nothing beyond the supervisor's %s",
				budget.Format(m.AvailableBytes()), budget.Format(host.SupervisorReserveBytes))
		}
		c.Logger.Info("memory budget of the sandboxes: the host's memory less what is kept for the host and the supervisor",
			"mem_total", budget.Format(m.TotalBytes), "cgroup_limit", budget.Format(m.CgroupLimitBytes))
	case merr == nil:
		// An explicit budget keeps room for the supervisor too.
		if err := m.CheckBudget(c.MemoryBudgetBytes); err != nil {
			return fmt.Errorf("supervisor: --memory-budget: %w", err)
		}
	}
	switch {
	case c.MaxMemoryBytes > c.MemoryBudgetBytes:
		return fmt.Errorf("supervisor: memory ceiling %s (--max-memory) is over the memory budget %s (--memory-budget): no sandbox of it could ever start",
			budget.Format(c.MaxMemoryBytes), budget.Format(c.MemoryBudgetBytes))
	case c.MaxMemoryBytes > 0:
		c.Ceilings.MemoryBytes = c.MaxMemoryBytes
	case c.Ceilings.MemoryBytes > c.MemoryBudgetBytes:
		c.Ceilings.MemoryBytes = c.MemoryBudgetBytes
	}
	if c.Defaults.MemoryBytes > c.Ceilings.MemoryBytes {
		return fmt.Errorf("supervisor: default memory limit %s is over the memory ceiling %s (--max-memory, at most --memory-budget)",
			budget.Format(c.Defaults.MemoryBytes), budget.Format(c.Ceilings.MemoryBytes))
	}
	c.Logger.Info("memory budget", "budget", budget.Format(c.MemoryBudgetBytes), "memory_ceiling", budget.Format(c.Ceilings.MemoryBytes))
	return nil
}

// build makes a Server's parts from a completed cfg and registers its
// load with the metrics. It starts no goroutine.
func build(cfg Config) (*Server, error) {
	mem, err := budget.New(cfg.MemoryBudgetBytes)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: cfg.MaxConcurrent, QueueSize: cfg.QueueSize, Budget: mem})
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	ids, err := nodeid.NewIssuer(cfg.NodeName)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	cfg.Registry.IDs = ids
	if cfg.ErrorStyle == ErrorStyleProDisco {
		// Execution ids as ProDisco's: UUIDs.
		cfg.Registry.IDs = ids.UUIDs()
	}
	// Counted first: the count is what a scrape right after the result sees.
	cfg.Registry.OnResult = countFinished(cfg.Metrics, cfg.Registry.OnResult)
	cfg.Registry.OnFinish = logFinished(cfg.Logger, cfg.Registry.OnFinish)
	// Requests resolve over cfg.Defaults as configured (a request with
	// more memory gets the configured workspace); one that asks for
	// nothing gets them fitted, and so does the warm pool.
	defaults, err := limits.Resolve(nil, nil, cfg.Defaults, cfg.Ceilings)
	if err != nil {
		return nil, fmt.Errorf("supervisor: default limits: %w", err)
	}
	s := &Server{cfg: cfg, reg: registry.New(cfg.Registry), sched: sched, budget: mem, health: health.NewServer(), log: cfg.Logger, ids: ids, defaults: defaults}
	s.runner, err = execution.New(execution.Config{
		Sandbox: &s.cfg.Sandbox, WarmPool: cfg.WarmPool, SandboxReuse: cfg.SandboxReuse, Defaults: defaults,
		Registry: s.reg, Scheduler: sched, Cache: cfg.Cache, Node: cfg.Node, Kube: cfg.Kube, Prometheus: cfg.Prometheus,
		Metrics: cfg.Metrics, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	sc := cfg.Sessions
	sc.Backend = session.SandboxBackend{Config: &s.cfg.Sandbox, Metrics: cfg.Metrics}
	sc.Runner, sc.Ceilings, sc.IDs, sc.Metrics, sc.Logger = s.runner, cfg.Ceilings, ids, cfg.Metrics, cfg.Logger.Named("session")
	sc.Budget = mem
	if s.sessions, err = session.New(sc); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if s.cfg.Profiles == nil {
		s.cfg.Profiles = profile.Default()
	}
	checkLifetime := func(d time.Duration) error { _, err := s.sessions.Lifetime(&d); return err }
	if err := s.cfg.Profiles.Validate(cfg.Defaults, cfg.Ceilings, checkLifetime); err != nil {
		return nil, fmt.Errorf("supervisor: sandbox %w", err)
	}
	if err := cfg.Metrics.RegisterLoad(s.load); err != nil {
		return nil, fmt.Errorf("supervisor: metrics: %w", err)
	}
	return s, nil
}

// logFinished returns the registry's OnFinish that logs every finished
// execution, one line at info (id, runtime, state, reason, exit code,
// signal, wall and queue wait in milliseconds, sandbox), then calls next.
func logFinished(log hclog.Logger, next func(registry.Meta, registry.Result)) func(registry.Meta, registry.Result) {
	return func(meta registry.Meta, res registry.Result) {
		log.Info("execution finished", "id", meta.ID, "runtime", meta.Runtime, "state", res.State.String(), "reason", res.Reason.String(),
			"exit_code", res.ExitCode, "signal", res.Signal, "wall_ms", res.Usage.WallMs, "queue_wait_ms", res.QueueWaitMs, "sandbox", res.SandboxID)
		if next != nil {
			next(meta, res)
		}
	}
}

// countFinished returns the registry's OnResult that counts every finished
// execution in m, then calls next; next itself when m is nil.
func countFinished(m *metrics.Metrics, next func(registry.Meta, registry.Result)) func(registry.Meta, registry.Result) {
	if m == nil {
		return next
	}
	return func(meta registry.Meta, res registry.Result) {
		m.ExecutionFinished(meta.Runtime, res.State.String(), res.Reason.String(),
			time.Duration(res.QueueWaitMs)*time.Millisecond, time.Duration(res.Usage.WallMs)*time.Millisecond)
		if next != nil {
			next(meta, res)
		}
	}
}

// start starts the Server's goroutines, the registry's retention sweeper,
// the warm pool's refill and the first start of the fork server, after
// which it reports itself ready (health.go).
func (s *Server) start() {
	var sweepCtx context.Context
	sweepCtx, s.stopSweep = context.WithCancel(context.Background())
	go func() { _ = s.reg.Run(sweepCtx) }()
	s.runner.Start()
	s.startHealth()
}

// load is what a metrics scrape reads: the queue, the warm pool and the
// host proxy's counts.
func (s *Server) load() metrics.Load {
	var l metrics.Load
	l.Running, l.Queued = s.sched.Counts()
	l.MaxConcurrent, l.QueueSize, l.Version = s.cfg.MaxConcurrent, s.cfg.QueueSize, s.cfg.Version
	if ids := s.cfg.Sandbox.IDs; ids != nil {
		l.UIDRanges, l.UIDRangesInUse = ids.Slots(), ids.InUse()
	}
	l.Ready = s.ready()
	l.Sessions = s.sessions.Live()
	l.MemoryHeldBytes, l.MemoryBudgetBytes = s.budget.Usage()
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

// Register registers the sandbox service, the session service,
// grpc.health.v1 and server reflection on g.
func (s *Server) Register(g *grpc.Server) {
	sandboxv1.RegisterSandboxServiceServer(g, s)
	execfarmv1.RegisterSessionServiceServer(g, sessions{s: s})
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
}

// IDs returns the Issuer of this run's ids: every kind of id the
// supervisor hands out (executions, session sandboxes) comes from it, so
// each names this node and this run.
func (s *Server) IDs() *nodeid.Issuer { return s.ids }

// DefaultLimits returns the limits of a request that asks for none.
// Its workspace is the configured default's, lowered to fit the default
// memory when it does not (limits.Resolve).
func (s *Server) DefaultLimits() limits.Set { return s.defaults }

// Registry returns the execution registry (for tests and metrics).
func (s *Server) Registry() *registry.Registry { return s.reg }

// Shutdown refuses new executions, cancels queued ones, waits up to grace
// for running ones, then kills the rest (they end CANCELLED) and waits for
// their sandboxes to be destroyed (execution.Runner.Shutdown); then it
// ends every session sandbox (session.Manager.Shutdown: a restart loses
// them). It returns an error when executions had to be killed.
func (s *Server) Shutdown(grace time.Duration) error {
	s.stopHealth()
	err := s.runner.Shutdown(grace)
	s.sessions.Shutdown()
	s.stopSweep()
	return err
}
