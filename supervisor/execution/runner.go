package execution

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/pool"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// Config configures a Runner. Registry, Scheduler and Sandbox are
// required; the rest may be zero.
type Config struct {
	// Sandbox configures every sandbox the Runner starts; it must stay
	// unchanged while the Runner lives.
	Sandbox *sandbox.Config
	// WarmPool is how many sandboxes of Defaults.Spec() are kept started
	// ahead of demand; 0 = none.
	WarmPool int
	// SandboxReuse is how many executions one warm sandbox may serve,
	// reset in between; 0 or 1 = single-use (supervisor.Config).
	SandboxReuse int
	// Defaults are the limits of a request that asks for none (the
	// server's defaults resolved, limits.Resolve): the warm pool's shape.
	Defaults limits.Set
	// Registry holds the executions.
	Registry *registry.Registry
	// Scheduler admits them.
	Scheduler *scheduler.Scheduler
	// Cache serves Input.Cached and receives successful new scripts of
	// Jobs marked Cacheable, in the cache of the Job's Account and
	// Client; nil = no cache.
	Cache *cache.Store
	// Node configures the node runtime; nil = none (Prepare refuses node
	// with program.ErrUnavailable).
	Node *node.Config
	// Kube and Prometheus are the host proxy's targets; with either set,
	// every run serves the proxy to its sandbox (Sandbox.Broker).
	Kube       *hostproxy.Kube
	Prometheus *hostproxy.Prometheus
	// MaxJobBytes bounds the bytes of the jobs admitted and not yet ended
	// (their code, program, stdin and environment, as they are held until
	// the run ends); past it Submit refuses with ErrJobBytes. 0 =
	// DefaultMaxJobBytes.
	MaxJobBytes int64
	// Metrics counts sandbox start-ups; nil = none.
	Metrics *metrics.Metrics
	// Logger receives the Runner's logs; nil = none.
	Logger hclog.Logger
}

// Runner runs executions, each in a goroutine of its own, from admission
// to its published result.
type Runner struct {
	cfg   Config
	reg   *registry.Registry
	sched *scheduler.Scheduler
	log   hclog.Logger

	runCtx  context.Context // cancelled when Shutdown's grace ends
	killAll context.CancelFunc

	runs sync.Map                  // execution id -> *run, while in flight
	pool atomic.Pointer[pool.Pool] // nil without a warm pool, or before Start
	// proxy serves Kube and Prometheus to every sandbox; nil without them.
	proxy *hostproxy.Server
	// warmShape is the warm pool's prepared process: the default limits,
	// goja, no program yet.
	warmShape *workerv1.RunRequest
	// skipPrepare: the latest request of the pool's Spec had another shape
	// than warmShape (a shell or python program, say), which would kill a
	// prepared goja process unused; until a request of warmShape comes,
	// warm sandboxes are made ready without one (see newPool).
	skipPrepare atomic.Bool

	mu       sync.Mutex
	closing  bool
	jobBytes int64 // bytes of the jobs admitted and not yet ended
	running  sync.WaitGroup
}

// New returns a Runner. It starts no goroutine: Start starts the warm
// pool, and each Submit its run's.
func New(cfg Config) (*Runner, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	r := &Runner{cfg: cfg, reg: cfg.Registry, sched: cfg.Scheduler, log: cfg.Logger}
	if cfg.Kube != nil || cfg.Prometheus != nil {
		r.proxy = hostproxy.NewServer(cfg.Kube, cfg.Prometheus)
	}
	r.runCtx, r.killAll = context.WithCancel(context.Background())
	if cfg.WarmPool > 0 {
		shape, err := program.Build(context.Background(), program.Input{Runtime: program.Goja, Code: "0"})
		if err != nil {
			return nil, fmt.Errorf("execution: warm pool: %w", err)
		}
		shape.Program = nil
		shape.Rlimits = cfg.Defaults.Rlimits()
		// A sandbox that will be reset keeps its goja process for the
		// next execution (runtime/keep): a run costs no process start.
		shape.Keep = cfg.SandboxReuse > 1
		r.warmShape = shape
	}
	return r, nil
}

// Start starts filling the warm pool, if the Runner has one (Config.WarmPool).
// Call it once, before Submit; Shutdown closes the pool.
func (r *Runner) Start() {
	if r.cfg.WarmPool > 0 {
		r.pool.Store(r.newPool())
	}
}

// PoolStats returns the warm pool's state; ok is false without a pool.
func (r *Runner) PoolStats() (s pool.Stats, ok bool) {
	p := r.pool.Load()
	if p == nil {
		return s, false
	}
	return p.Stats(), true
}

// Closing reports whether Shutdown has begun.
func (r *Runner) Closing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// Submit admits j through the scheduler, registers it and starts it in the
// background in a fresh sandbox: a warm one, or one started on demand,
// destroyed (or reset for the warm pool) after the run. Its slot holds
// the sandbox's memory limit (j.Limits.MemoryBytes) of the scheduler's
// memory budget: it waits in the queue until that fits. The returned
// execution is PENDING or RUNNING. Errors: ErrShuttingDown once Shutdown
// has begun; a *scheduler.FullError (wrapped) when the queue is full; a
// *budget.Error wrapping budget.ErrTooLarge when the memory limit alone
// is over the budget, or budget.ErrExhausted when it does not fit now
// and the scheduler lets none wait (QueueSize 0).
func (r *Runner) Submit(j *Job) (*registry.Execution, error) {
	if r.warmShape != nil && j.Limits.Spec() == r.cfg.Defaults.Spec() {
		r.skipPrepare.Store(!workerv1.SameShape(j.Request, r.warmShape))
	}
	return r.submit(fresh{r}, j, j.Limits.MemoryBytes)
}

// SubmitIn is Submit with the run's sandbox from p, which must stay usable
// until the execution has ended. The sandbox's memory is not taken from
// the scheduler's budget: whoever holds the sandbox counts it (a session
// sandbox, for its life).
func (r *Runner) SubmitIn(p Placement, j *Job) (*registry.Execution, error) {
	return r.submit(p, j, 0)
}

// submit is SubmitIn with the run's slot holding memoryBytes of the
// budget.
func (r *Runner) submit(p Placement, j *Job, memoryBytes int64) (*registry.Execution, error) {
	size := j.Bytes()
	if err := r.admit(size); err != nil {
		if errors.Is(err, ErrShuttingDown) {
			r.cfg.Metrics.QueueRejected(metrics.RejectShuttingDown)
		} else {
			r.cfg.Metrics.QueueRejected(metrics.RejectQueueBytes)
		}
		return nil, err
	}
	ticket, err := r.sched.Enqueue(memoryBytes)
	if err != nil {
		r.done(size)
		reason := metrics.RejectQueueFull
		if errors.Is(err, budget.ErrTooLarge) || errors.Is(err, budget.ErrExhausted) {
			reason = metrics.RejectMemoryBudget
		}
		r.cfg.Metrics.QueueRejected(reason)
		return nil, fmt.Errorf("execution: %w", err)
	}
	var e *registry.Execution
	var onFinish func(registry.Result)
	if o := j.Observer; o != nil {
		// Called only once e is set: the execution ends after Create.
		onFinish = func(res registry.Result) { o.Finished(e, res) }
	}
	e = r.reg.Create(registry.Meta{
		CodePreview:    j.Code,
		Runtime:        j.Runtime,
		IsCached:       j.CachedName != "",
		CachedName:     j.CachedName,
		MaxOutputBytes: j.Limits.OutputBytes,
		Owner:          j.Owner,
		Account:        j.Account,
		SandboxID:      j.SandboxID,
		OnFinish:       onFinish,
	})
	x := &run{runner: r, place: p, e: e, j: j, ticket: ticket, queued: time.Now()}
	r.runs.Store(e.ID(), x)
	x.ctx, x.cancel = context.WithCancel(r.runCtx)
	e.SetCancel(func() { x.stop(registry.ReasonCancelled) })
	if j.Observer != nil {
		j.Observer.Created(e)
	}
	go x.execute()
	return e, nil
}

// admit registers the start of an execution goroutine holding a job of
// size bytes, unless closing or over MaxJobBytes; done undoes it.
func (r *Runner) admit(size int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return ErrShuttingDown
	}
	if limit := cmpOr(r.cfg.MaxJobBytes, DefaultMaxJobBytes); r.jobBytes > 0 && r.jobBytes+size > limit {
		return &JobBytesError{Size: size, Held: r.jobBytes, Limit: limit}
	}
	r.jobBytes += size
	r.running.Add(1)
	return nil
}

// done ends what admit began.
func (r *Runner) done(size int64) {
	r.mu.Lock()
	r.jobBytes -= size
	r.mu.Unlock()
	r.running.Done()
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// QueuePosition returns the execution's place in the queue (1 = next),
// 0 when it is not queued.
func (r *Runner) QueuePosition(id string) int {
	if v, ok := r.runs.Load(id); ok {
		return v.(*run).ticket.Position()
	}
	return 0
}

// Shutdown refuses new executions, cancels queued ones, waits up to grace
// for running ones, then kills the rest (they end CANCELLED) and waits for
// their sandboxes to be destroyed; then it closes the warm pool. It
// returns an error when executions had to be killed.
func (r *Runner) Shutdown(grace time.Duration) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	for _, info := range r.reg.List([]registry.State{registry.StatePending}, 0, 0) {
		if e, err := r.reg.Get(info.ID); err == nil {
			_, _ = e.Cancel()
		}
	}
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(grace):
		err = errors.New("execution: grace period over, running executions killed")
		// Stop each run as cancelled (killing its sandbox) so that it
		// ends CANCELLED rather than as a worker lost to the context.
		r.runs.Range(func(_, v any) bool {
			v.(*run).stop(registry.ReasonCancelled)
			return true
		})
		r.killAll()
		<-done
	}
	r.killAll()
	if p := r.pool.Load(); p != nil {
		p.Close()
	}
	return err
}
