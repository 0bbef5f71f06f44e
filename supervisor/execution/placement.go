package execution

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/pool"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Sandbox is what a run needs of the sandbox its Placement gives it: run
// the program, read the cgroup's usage, sample its pids for a peak the
// cgroup cannot keep, and serve the host proxy over its broker.
// *sandbox.Sandbox is one; a session sandbox's exec is another (package
// session), which runs beside other execs in a sandbox it does not own.
type Sandbox interface {
	// ID names the sandbox (registry.Result.SandboxID).
	ID() string
	// Run runs the program of req and calls onEvent for every event but
	// the exit, in order (sandbox.Sandbox.Run).
	Run(ctx context.Context, req *workerv1.RunRequest, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error)
	// Usage reads the sandbox's cgroup.
	Usage() (cgroup.Usage, error)
	// Uses is how many Runs the sandbox served before; above 0 the run
	// samples pids for its peak (Sample).
	Uses() int
	// Sample records the pids count for the peak.
	Sample()
	// ServeBroker serves the host proxy to the worker.
	ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error)
}

// Placement is where a run gets its sandbox, how a stop reaches the run's
// processes, and what becomes of the sandbox after the run. The Runner's
// own placement (Submit) takes a warm sandbox or starts one and destroys
// it after the run, or resets it for the warm pool (Config.SandboxReuse).
// A sandbox held across many executions (a session) is another placement
// (SubmitIn): it hands out the sandbox it holds, and keeps it.
//
// A run calls Acquire once; if it returns a sandbox, Release exactly once
// and, in between, Kill any number of times from any goroutine (a
// cancel, the wall-clock timer, the CPU-time watch). Kill is never called
// after Release has begun.
type Placement interface {
	// Acquire returns a started sandbox for spec, the caller's for the
	// run. ctx ends when the run is stopped (then an error is expected).
	// id is the execution's, for logs (as in Release).
	Acquire(ctx context.Context, id string, spec sandbox.Spec) (Sandbox, error)
	// Kill kills every process the run started in sb. It must not wait
	// for the run: Sandbox.Run then returns.
	Kill(sb Sandbox) error
	// Release ends the run's hold on sb, and calls publish (which
	// publishes the run's result) once no process of the run can run any
	// more: the result must never be seen while some of it still runs.
	// reusable is true when the run ended by its program's own exit,
	// without a stop and without the host proxy: only then may sb serve
	// another execution.
	Release(id string, sb Sandbox, reusable bool, publish func())
}

// fresh is the Runner's own placement: a sandbox of the warm pool when
// one of the run's Spec is ready, else one started on demand; after the
// run it is destroyed, or reset and recycled into the pool.
type fresh struct{ r *Runner }

// Acquire takes a ready warm sandbox for spec, or starts one.
func (f fresh) Acquire(ctx context.Context, id string, spec sandbox.Spec) (Sandbox, error) {
	r := f.r
	if p := r.pool.Load(); p != nil {
		if sb := p.Take(spec); sb != nil {
			return sb, nil
		}
	}
	sb, err := r.startSandbox(ctx, metrics.PathOnDemand, spec)
	if err != nil {
		return nil, err // not a nil *sandbox.Sandbox in a non-nil Sandbox
	}
	if r.log.IsDebug() {
		r.log.Debug("sandbox started", append([]any{"execution", id, "sandbox", sb.ID()}, sandbox.LogFields(sb.StartPhases())...)...)
	}
	return sb, nil
}

// Kill kills the whole sandbox (its cgroup): it serves this run alone.
// sb is the *sandbox.Sandbox that Acquire gave.
func (fresh) Kill(sb Sandbox) error { return sb.(*sandbox.Sandbox).Kill() }

// Release publishes the result as soon as no process of the run can run
// any more, then finishes the teardown: when the sandbox's cgroup lists
// no process but the worker (Sandbox.Quiet: the program and everything it
// started have exited, the usual end), at once; otherwise once the reset
// (reusable, lent by the pool) has killed them (or found only a kept goja
// process, idle since its run's reply, beside the worker), or the cgroup
// has been killed and found empty. The rest — the reset's clean-up of files and
// IPC objects, or the destroy (worker, namespaces, cgroup, host
// directory, uid range) — follows the publication, still on the run's
// goroutine: its scheduler slot and uid range stay held until the end,
// and Runner.Shutdown waits for it. A reset sandbox then goes back to the
// pool. sb is the *sandbox.Sandbox that Acquire gave.
func (f fresh) Release(id string, s Sandbox, reusable bool, publish func()) {
	r, sb := f.r, s.(*sandbox.Sandbox)
	published := false
	once := func() {
		if !published {
			published = true
			publish()
		}
	}
	// Counted as being reset before the result is out: the client's next
	// request may then wait for this sandbox (Pool.Take).
	p := r.pool.Load()
	reuse := reusable && p != nil && p.BeginReset(sb)
	quiet, err := sb.Quiet()
	if err != nil {
		r.log.Warn("list sandbox processes", "execution", id, "sandbox", sb.ID(), "error", err)
		r.cfg.Metrics.CgroupFailed(err)
	}
	if quiet {
		once()
	}
	if reuse {
		err := sb.Reset(r.runCtx, once)
		if err == nil {
			p.Recycle(sb)
			return
		}
		r.log.Warn("reset sandbox for reuse; destroying it", "execution", id, "sandbox", sb.ID(), "error", err)
	}
	if !published && sb.Kill() == nil {
		once() // the cgroup is empty: the rest of the destroy can follow
	}
	if err := sb.Close(); err != nil {
		r.log.Warn("destroy sandbox", "execution", id, "sandbox", sb.ID(), "error", err)
		r.cfg.Metrics.SandboxClosed(err)
	}
	if p != nil {
		p.Discard(sb)
	}
	once()
}

// newPool returns the warm pool of cfg.WarmPool sandboxes of
// Defaults.Spec(), each holding a prepared goja runtime process with the
// default limits (so that a default goja request starts no process at
// all) while such requests come: after a request of the pool's Spec but
// another shape (skipPrepare), sandboxes started or reset are made ready
// without one, rather than prepare a process that request would kill
// unused; a goja request that takes one starts its process itself. It
// starts filling at once.
func (r *Runner) newPool() *pool.Pool {
	spec := r.cfg.Defaults.Spec()
	return pool.New(r.cfg.WarmPool, r.cfg.SandboxReuse, spec,
		func(ctx context.Context) (*sandbox.Sandbox, error) {
			return r.startSandbox(ctx, metrics.PathWarmPool, spec)
		},
		func(ctx context.Context, sb *sandbox.Sandbox) error {
			if r.skipPrepare.Load() {
				return nil
			}
			return sb.Prepare(ctx, r.warmShape)
		},
		r.log.Named("pool"))
}

// startSandbox starts a sandbox for path (metrics.PathWarmPool,
// metrics.PathOnDemand) and counts the start-up. Warm-pool sandboxes start
// in the background (sandbox.StartInBackground): a refill must not slow
// the execution that took the sandbox it replaces.
func (r *Runner) startSandbox(ctx context.Context, path string, spec sandbox.Spec) (*sandbox.Sandbox, error) {
	t := time.Now()
	start := sandbox.Start
	if path == metrics.PathWarmPool {
		start = sandbox.StartInBackground
	}
	sb, err := start(ctx, r.cfg.Sandbox, spec)
	var phases []sandbox.Phase
	if err == nil {
		phases = sb.StartPhases()
	}
	r.cfg.Metrics.SandboxStarted(path, time.Since(t), phases, err)
	return sb, err
}
