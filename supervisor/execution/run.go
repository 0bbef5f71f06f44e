package execution

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// run is one execution in flight.
type run struct {
	queued time.Time // admission: the queue wait starts here
	runner *Runner
	e      *registry.Execution
	j      *Job
	ticket *scheduler.Ticket
	ctx    context.Context
	cancel context.CancelFunc

	results []byte // test mode's results channel, at most MaxResultsBytes

	// killing is held (read) by stop while it kills the sandbox, and
	// (write) to take the sandbox away from stop for good: a kill that has
	// read r.sb finishes before the sandbox can serve another execution.
	killing sync.RWMutex
	mu      sync.Mutex
	sb      *sandbox.Sandbox
	reason  registry.Reason // set by stop: cancelled, timeout or cpu_time
}

// stop ends the execution for reason (first reason wins) and kills its
// sandbox, if it has one yet.
func (r *run) stop(reason registry.Reason) {
	r.killing.RLock()
	r.mu.Lock()
	if r.reason == 0 {
		r.reason = reason
	}
	sb := r.sb
	r.mu.Unlock()
	if sb != nil {
		_ = sb.Kill()
	}
	r.killing.RUnlock()
	r.cancel()
}

// watch polls the sandbox while the run lasts. With limitMs > 0 it stops
// the run with reason CPU_TIME once the sandbox's cgroup has used limitMs
// of CPU (user+system, every process of the sandbox together, unlike a
// per-process RLIMIT_CPU) since base; with sample it records the pids
// count for the peak of a reused sandbox (cgroup.Manager.ResetPeaks). It
// returns the function that ends the watch and waits for it to end.
func (r *run) watch(sb *sandbox.Sandbox, base cgroup.Usage, limitMs int64, sample bool) func() {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(limits.CPUTimeCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.ctx.Done():
				return
			case <-t.C:
			}
			if sample {
				sb.Sample()
			}
			if limitMs <= 0 {
				continue
			}
			u, err := sb.Usage()
			if err != nil {
				continue
			}
			used := u.CPUUserMicros + u.CPUSystemMicros - base.CPUUserMicros - base.CPUSystemMicros
			if used >= limitMs*1000 {
				r.stop(registry.ReasonCPUTime)
				return
			}
		}
	}()
	return func() { close(done); <-ended }
}

func (r *run) stopReason() registry.Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

func (r *run) execute() {
	defer r.runner.running.Done()
	defer r.cancel()
	queued := r.queued
	defer r.runner.runs.Delete(r.e.ID())
	if err := r.ticket.Wait(r.ctx); err != nil {
		r.finishStopped(time.Since(queued).Milliseconds(), "cancelled while queued")
		return
	}
	defer r.ticket.Release()
	queueWait := time.Since(queued).Milliseconds()
	if err := r.e.Start(); err != nil {
		return // already terminal: cancelled while queued
	}
	l := r.j.Limits
	spec := l.Spec()
	var sb *sandbox.Sandbox
	var err error
	if r.runner.pool != nil {
		sb = r.runner.pool.Take(spec)
	}
	if sb == nil {
		sb, err = r.runner.startSandbox(r.ctx, metrics.PathOnDemand, spec)
		if err == nil && r.runner.log.IsDebug() {
			r.runner.log.Debug("sandbox started", append([]any{"execution", r.e.ID(), "sandbox", sb.ID()}, sandbox.LogFields(sb.StartPhases())...)...)
		}
	}
	if err != nil {
		if r.stopReason() != 0 || r.ctx.Err() != nil {
			r.finishStopped(queueWait, "")
			return
		}
		r.runner.log.Error("sandbox start failed", "execution", r.e.ID(), "error", err)
		r.finish(registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal,
			Error: "sandbox start failed: " + err.Error(), QueueWaitMs: queueWait})
		return
	}
	r.mu.Lock()
	r.sb = sb
	stopped := r.reason != 0
	r.mu.Unlock()
	if stopped {
		r.destroy(sb)
		r.finishStopped(queueWait, "")
		return
	}
	if r.runner.cfg.Kube != nil || r.runner.cfg.Prometheus != nil {
		id, err := sb.ServeBroker(func(g *grpc.Server) {
			workerv1.RegisterHostProxyServer(g, &proxyServer{kube: r.runner.cfg.Kube, prom: r.runner.cfg.Prometheus})
		})
		if err != nil {
			r.destroy(sb)
			r.finish(registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal,
				Error: "serve the Kubernetes/Prometheus proxy: " + err.Error(), QueueWaitMs: queueWait, SandboxID: sb.ID()})
			return
		}
		r.j.Request.ProxyBrokerId = id
	}
	// CPU time is counted from here: the worker's start-up (and a warm
	// sandbox's idle time) is not the program's.
	base, _ := sb.Usage()
	timer := time.AfterFunc(time.Duration(l.TimeoutMs)*time.Millisecond, func() { r.stop(registry.ReasonTimeout) })
	endWatch := func() {}
	if reused := sb.Uses() > 0; l.CPUTimeMs > 0 || reused {
		endWatch = r.watch(sb, base, l.CPUTimeMs, reused)
	}
	started := time.Now()
	exit, runErr := sb.Run(r.ctx, r.j.Request, func(ev *workerv1.RunEvent) {
		switch x := ev.GetEvent().(type) {
		case *workerv1.RunEvent_Stdout:
			r.e.Write(registry.Stdout, x.Stdout)
		case *workerv1.RunEvent_Stderr:
			r.e.Write(registry.Stderr, x.Stderr)
		case *workerv1.RunEvent_Results:
			// Bounded: the results channel is the program's too.
			if room := MaxResultsBytes - len(r.results); room > 0 {
				r.results = append(r.results, x.Results[:min(room, len(x.Results))]...)
			}
		}
	})
	wall := time.Since(started).Milliseconds()
	timer.Stop()
	endWatch()
	usage, uerr := sb.Usage()
	if uerr != nil {
		r.runner.log.Warn("read sandbox usage", "execution", r.e.ID(), "error", uerr)
	}
	usage.CPUUserMicros = max(0, usage.CPUUserMicros-base.CPUUserMicros)
	usage.CPUSystemMicros = max(0, usage.CPUSystemMicros-base.CPUSystemMicros)
	// The OOM kill counter is the cgroup's: a reused sandbox's counts from
	// earlier executions are not this one's.
	usage.OOMKills = max(0, usage.OOMKills-base.OOMKills)
	res := classify(r.stopReason(), exit, runErr, usage, l)
	res.QueueWaitMs = queueWait
	res.SandboxID = sb.ID()
	res.Usage = registry.Usage{
		CPUUserMicros: usage.CPUUserMicros, CPUSystemMicros: usage.CPUSystemMicros, WallMs: wall,
		PeakMemoryBytes: usage.PeakMemoryBytes, PeakMemorySource: usage.PeakMemorySource,
		PidsPeak: usage.PidsPeak, OOMKills: usage.OOMKills,
	}
	// The result is published only once nothing of the execution is left:
	// its sandbox destroyed (no process, cgroup, mount or socket), or,
	// with --sandbox-reuse, reset (no process, file or IPC object of it).
	if r.recyclable(sb, res, runErr) {
		// The execution is over: a late cancel must not reach the
		// sandbox, which may soon serve another.
		r.killing.Lock()
		r.mu.Lock()
		r.sb = nil
		r.mu.Unlock()
		r.killing.Unlock()
		err := sb.Reset(r.runner.runCtx)
		if err == nil {
			r.finish(res)
			r.runner.pool.Recycle(sb)
			return
		}
		r.runner.log.Warn("reset sandbox for reuse; destroying it", "execution", r.e.ID(), "sandbox", sb.ID(), "error", err)
	}
	r.destroy(sb)
	r.finish(res)
}

// recyclable reports whether sb may serve another execution after a reset:
// it came from the warm pool with uses left (pool.Reusable), and the run
// ended by the program's own exit, without the host proxy.
func (r *run) recyclable(sb *sandbox.Sandbox, res registry.Result, runErr error) bool {
	return r.runner.pool != nil && runErr == nil && r.stopReason() == 0 &&
		res.Reason == registry.ReasonExited && r.j.Request.GetProxyBrokerId() == 0 &&
		r.runner.pool.Reusable(sb)
}

// destroy closes the sandbox. It runs before the result is published, so
// that a terminal execution has no process, cgroup, mount or socket left
// on the host: a client that sees the result may rely on it.
func (r *run) destroy(sb *sandbox.Sandbox) {
	if err := sb.Close(); err != nil {
		r.runner.log.Warn("destroy sandbox", "execution", r.e.ID(), "sandbox", sb.ID(), "error", err)
	}
	if r.runner.pool != nil {
		r.runner.pool.Discard(sb)
	}
}

// finishStopped ends an execution that was stopped before it ran.
func (r *run) finishStopped(queueWait int64, msg string) {
	reason := r.stopReason()
	if reason == 0 {
		reason = registry.ReasonCancelled
		msg = "supervisor shutting down"
	}
	res := registry.Result{State: registry.StateCancelled, Reason: reason, QueueWaitMs: queueWait, Error: msg}
	if reason == registry.ReasonTimeout {
		res.State = registry.StateTimeout
	}
	if res.Error == "" {
		res.Error = reason.String()
	}
	r.finish(res)
}

func (r *run) finish(res registry.Result) {
	x := Extra{Limits: r.j.Limits, Runtime: r.j.Runtime, Results: r.results}
	if res.Success && res.State == registry.StateCompleted && r.j.Cacheable {
		// Failed runs are never cached; the same code is stored once.
		entry, created, err := r.runner.cfg.Cache.Save(r.j.Code, time.Now())
		if err != nil {
			r.runner.log.Warn("cache script", "execution", r.e.ID(), "error", err)
		} else if created {
			x.Cached = &entry
		}
	}
	res.Extra = x
	r.e.Finish(res)
}
