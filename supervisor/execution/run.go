package execution

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/testresult"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// run is one execution in flight. Its goroutine (execute) takes the steps
// in order:
//
//	slot      wait for a scheduler slot       cancelled while queued → CANCELLED
//	acquire   a sandbox from the Placement     failed → FAILED/internal
//	attach    the host proxy, if configured    failed → FAILED/internal
//	program   run it; timer and CPU-time watch
//	measure   cgroup usage since the run began, then classify
//	release   destroy, reset or keep the sandbox, then publish the result
//
// stop (cancel, timeout, CPU time) may come from any goroutine at any
// step; it records the first reason and kills the run's processes.
type run struct {
	queued time.Time // admission: the queue wait starts here
	runner *Runner
	place  Placement
	e      *registry.Execution
	j      *Job
	ticket *scheduler.Ticket
	ctx    context.Context
	cancel context.CancelFunc

	queueWaitMs int64  // set by slot
	results     []byte // test mode's results channel, at most MaxResultsBytes
	// console reads the JavaScript runtimes' console channel; its lines go
	// to the registry, its thrown message to the result's error.
	console jsconsole.Parser

	// killing is held (read) by stop while it kills the run's processes,
	// and (write) by detach to take the sandbox away from stop for good:
	// a kill that has read r.sb finishes before the sandbox is released.
	killing sync.RWMutex
	mu      sync.Mutex
	sb      Sandbox
	reason  registry.Reason // set by stop: cancelled, timeout or cpu_time
}

// ran is what the program step returns.
type ran struct {
	exit   *workerv1.Exit
	err    error        // the worker call's error
	base   cgroup.Usage // the sandbox's usage before the program started
	wallMs int64
}

// execute is the run's goroutine: the steps of run, in order.
func (r *run) execute() {
	defer r.runner.done(r.j.Bytes())
	defer r.cancel()
	defer r.runner.runs.Delete(r.e.ID())
	if !r.slot() {
		return
	}
	defer r.ticket.Release()
	// The wall-clock timeout runs from the start, sandbox start-up
	// included: a sandbox that never comes (a stuck fork server) ends the
	// execution TIMEOUT on time.
	timer := time.AfterFunc(time.Duration(r.j.Limits.TimeoutMs)*time.Millisecond, func() { r.stop(registry.ReasonTimeout) })
	defer timer.Stop()
	sb := r.acquire()
	if sb == nil {
		return
	}
	if err := r.attachProxy(sb); err != nil {
		r.release(sb, false, registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal,
			Error: "serve the Kubernetes/Prometheus proxy: " + err.Error(), SandboxID: sb.ID()})
		return
	}
	out := r.program(sb)
	timer.Stop()
	res := r.measure(sb, out)
	r.release(sb, r.reusable(res, out.err), res)
}

// slot waits for a scheduler slot and moves the execution to RUNNING. It
// returns false when the execution ended while queued (cancelled, or the
// supervisor shutting down), which it then finishes.
func (r *run) slot() bool {
	if err := r.ticket.Wait(r.ctx); err != nil {
		r.queueWaitMs = time.Since(r.queued).Milliseconds()
		r.finishStopped()
		return false
	}
	r.queueWaitMs = time.Since(r.queued).Milliseconds()
	if err := r.e.Start(); err != nil {
		r.ticket.Release()
		return false // already terminal: cancelled while queued
	}
	return true
}

// acquire gets the run's sandbox from its Placement and hands it to stop.
// It returns nil when the run ended instead (stopped, or no sandbox),
// which it then finishes.
//
// A run stopped while its sandbox starts (its timeout, a cancel) is
// finished at once: its program never ran, so no process of it can run,
// even when a start that does not heed the stop (the go-plugin handshake,
// a stopped fork server) still holds the sandbox; that sandbox is then
// destroyed when it comes, before the run gives up its slot.
func (r *run) acquire() Sandbox {
	type acquired struct {
		sb  Sandbox
		err error
	}
	ch := make(chan acquired, 1)
	go func() {
		sb, err := r.place.Acquire(r.ctx, r.e.ID(), r.j.Limits.Spec())
		ch <- acquired{sb, err}
	}()
	var a acquired
	select {
	case a = <-ch:
	case <-r.ctx.Done():
		r.finishStopped()
		if a = <-ch; a.sb != nil {
			r.place.Release(r.e.ID(), a.sb, false, func() {})
		}
		return nil
	}
	sb, err := a.sb, a.err
	if err != nil {
		if errors.Is(err, ErrSandboxGone) {
			r.stop(registry.ReasonCancelled)
			r.finishStopped()
			return nil
		}
		if r.stopReason() != 0 || r.ctx.Err() != nil {
			r.finishStopped()
			return nil
		}
		r.runner.log.Error("sandbox start failed", "execution", r.e.ID(), "error", err)
		r.finish(registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal,
			Error: "sandbox start failed: " + err.Error(), QueueWaitMs: r.queueWaitMs})
		return nil
	}
	r.mu.Lock()
	r.sb = sb
	stopped := r.reason != 0
	r.mu.Unlock()
	if stopped {
		r.detach()
		r.place.Release(r.e.ID(), sb, false, func() { r.finishStopped() })
		return nil
	}
	return sb
}

// attachProxy serves the Kubernetes/Prometheus proxy to the sandbox over
// the go-plugin broker when either target is configured, and names the
// broker stream in the worker's request.
func (r *run) attachProxy(sb Sandbox) error {
	if r.runner.proxy == nil {
		return nil
	}
	// One hostproxy.Server for every sandbox: it bounds the requests of
	// all of them together; the broker's options bound this one's.
	id, err := sb.ServeBroker(func(g *grpc.Server) {
		workerv1.RegisterHostProxyServer(g, r.runner.proxy)
	}, hostproxy.BrokerOptions()...)
	if err != nil {
		return err
	}
	r.j.Request.ProxyBrokerId = id
	return nil
}

// program runs the job's program in sb (the wall-clock timer runs since
// execute started it) with, with a CPU-time limit or on a reused sandbox,
// the watch; every output
// chunk goes into the registry as it comes.
func (r *run) program(sb Sandbox) ran {
	l := r.j.Limits
	// CPU time is counted from here: the worker's start-up (and a warm
	// sandbox's idle time) is not the program's.
	base, _ := sb.Usage()
	endWatch := func() {}
	if reused := sb.Uses() > 0; l.CPUTimeMs > 0 || reused {
		endWatch = r.watch(sb, base, l.CPUTimeMs, reused)
	}
	started := time.Now()
	exit, err := sb.Run(r.ctx, r.j.Request, r.onEvent)
	wall := time.Since(started).Milliseconds()
	endWatch()
	return ran{exit: exit, err: err, base: base, wallMs: wall}
}

// onEvent records one event of the program: output into the registry,
// test results into the bounded results channel.
func (r *run) onEvent(ev *workerv1.RunEvent) {
	switch x := ev.GetEvent().(type) {
	case *workerv1.RunEvent_Stdout:
		r.e.Write(registry.Stdout, x.Stdout)
		r.observe(registry.Stdout, x.Stdout)
	case *workerv1.RunEvent_Stderr:
		r.e.Write(registry.Stderr, x.Stderr)
		r.observe(registry.Stderr, x.Stderr)
	case *workerv1.RunEvent_Results:
		// Bounded: the results channel is the program's too.
		if room := MaxResultsBytes - len(r.results); room > 0 {
			r.results = append(r.results, x.Results[:min(room, len(x.Results))]...)
		}
	case *workerv1.RunEvent_Console:
		// Bounded by the parser's caps, whatever the program sends.
		r.e.AppendLines(r.console.Write(x.Console))
	}
}

// observe gives the Observer its copy of an output chunk.
func (r *run) observe(s registry.Stream, p []byte) {
	if o := r.j.Observer; o != nil && len(p) > 0 {
		o.Output(s, append([]byte(nil), p...))
	}
}

// measure reads the sandbox's usage since the program started and
// classifies how the run ended.
func (r *run) measure(sb Sandbox, out ran) registry.Result {
	usage, err := sb.Usage()
	if err != nil {
		r.runner.log.Warn("read sandbox usage", "execution", r.e.ID(), "error", err)
		r.runner.cfg.Metrics.CgroupFailed(err)
	}
	usage = since(usage, out.base)
	res := classify(r.stopReason(), out.exit, out.err, usage, r.j.Limits)
	res.SandboxID = sb.ID()
	res.Usage = registry.Usage{
		CPUUserMicros: usage.CPUUserMicros, CPUSystemMicros: usage.CPUSystemMicros, WallMs: out.wallMs,
		PeakMemoryBytes: usage.PeakMemoryBytes, PeakMemorySource: usage.PeakMemorySource,
		PidsPeak: usage.PidsPeak, OOMKills: usage.OOMKills,
	}
	return res
}

// since returns u with the counters that accumulate over a sandbox's life
// (CPU time, OOM kills, limit hits) counted from base: a reused sandbox's earlier
// executions are not this one's. Peaks are reset between uses instead
// (cgroup.Manager.ResetPeaks).
func since(u, base cgroup.Usage) cgroup.Usage {
	u.CPUUserMicros = max(0, u.CPUUserMicros-base.CPUUserMicros)
	u.CPUSystemMicros = max(0, u.CPUSystemMicros-base.CPUSystemMicros)
	u.OOMKills = max(0, u.OOMKills-base.OOMKills)
	u.LimitOOMs = max(0, u.LimitOOMs-base.LimitOOMs)
	return u
}

// reusable reports whether the run's sandbox may serve another execution:
// the run ended by the program's own exit, without a stop and without the
// host proxy.
func (r *run) reusable(res registry.Result, runErr error) bool {
	return runErr == nil && r.stopReason() == 0 && res.Reason == registry.ReasonExited &&
		r.j.Request.GetProxyBrokerId() == 0
}

// release takes sb away from stop, gives it back to the Placement, and
// publishes res once nothing of the execution can run any more (every
// process of it gone; a client that sees the result may rely on it). The
// Placement may finish the sandbox's teardown after that, before release
// returns: the run's slot is held until then.
func (r *run) release(sb Sandbox, reusable bool, res registry.Result) {
	r.detach()
	r.place.Release(r.e.ID(), sb, reusable, func() { r.finish(res) })
}

// detach takes the sandbox away from stop for good: a late cancel must not
// reach a sandbox that may soon serve another execution.
func (r *run) detach() {
	r.killing.Lock()
	r.mu.Lock()
	r.sb = nil
	r.mu.Unlock()
	r.killing.Unlock()
}

// stop ends the execution for reason (first reason wins) and kills its
// processes, if it has a sandbox yet.
func (r *run) stop(reason registry.Reason) {
	r.killing.RLock()
	r.mu.Lock()
	if r.reason == 0 {
		r.reason = reason
	}
	sb := r.sb
	r.mu.Unlock()
	if sb != nil {
		_ = r.place.Kill(sb)
	}
	r.killing.RUnlock()
	r.cancel()
}

func (r *run) stopReason() registry.Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// finishStopped ends an execution that was stopped before its program
// ran: by its stop's reason, or, with none, by the supervisor shutting
// down.
func (r *run) finishStopped() {
	res := registry.Result{State: registry.StateCancelled, Reason: r.stopReason()}
	switch res.Reason {
	case 0:
		res.Reason, res.Error = registry.ReasonCancelled, registry.CancelledText+": the supervisor is shutting down"
	case registry.ReasonTimeout:
		res.State, res.Error = registry.StateTimeout, registry.TimedOutText
	case registry.ReasonCancelled:
		res.Error = registry.CancelledText
	default:
		res.Error = res.Reason.String()
	}
	r.finish(res)
}

// finish publishes res with the queue wait, its error text (errorText),
// Extra and the test results (Attachment), first saving new code of a
// successful run in the cache.
func (r *run) finish(res registry.Result) {
	res.QueueWaitMs = r.queueWaitMs
	res.Error = r.errorText(res)
	x := Extra{Limits: r.j.Limits, Runtime: r.j.Runtime, Deterministic: r.j.Deterministic, Seed: r.j.Seed}
	res.Attachment = r.results // counted in the registry's retention budget
	if r.j.Request.GetResults() {
		// Only the harness' lines: the code under test can write on the
		// channel (node: a net.Socket on fd 4), never with the nonce.
		res.Attachment = testresult.Authenticate(r.results, r.j.ResultsNonce)
	}
	if res.Success && res.State == registry.StateCompleted && r.j.Cacheable {
		// Failed runs are never cached; the same code is stored once.
		var (
			entry   cache.Entry
			created bool
		)
		c, err := r.runner.cfg.Cache.For(cache.Owner{Principal: r.j.Account, Client: r.j.Client})
		if err == nil {
			entry, created, err = c.Save(r.j.Code, time.Now())
		}
		if err != nil {
			r.runner.log.Warn("cache script", "execution", r.e.ID(), "error", err)
		} else if created {
			x.Cached = &entry
		}
	}
	res.Extra = x
	r.e.Finish(res)
}
