package supervisor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

func defaultConcurrency() int { return runtime.NumCPU() }

// job is a validated request, ready to run.
type job struct {
	runtime string
	req     *workerv1.RunRequest
	limits  Limits
	// code is the source as submitted (for the preview and the cache).
	code string
	// cachedName is the cache entry the code came from, "" for new code.
	cachedName string
	// cacheable: new TypeScript/JavaScript code, saved after a success.
	cacheable bool
}

// extra is what the supervisor keeps in registry.Result.Extra.
type extra struct {
	limits  Limits
	runtime string
	// cached is the cache entry created by this execution, if any.
	cached *cache.Entry
	// results is what a test-mode program wrote on its results channel.
	results []byte
}

// maxResultsBytes bounds a test run's results channel (JSON lines; the
// parser caps the number of results and their strings too).
const maxResultsBytes = 8 << 20

// runtimeName maps the wire enum to a runtime name.
func (s *Server) runtimeName(r sandboxv1.Runtime) (string, error) {
	switch r {
	case sandboxv1.Runtime_RUNTIME_UNSPECIFIED:
		return s.cfg.DefaultRuntime, nil
	case sandboxv1.Runtime_RUNTIME_GOJA:
		return program.Goja, nil
	case sandboxv1.Runtime_RUNTIME_NODE:
		return program.Node, nil
	case sandboxv1.Runtime_RUNTIME_SHELL:
		return program.Shell, nil
	case sandboxv1.Runtime_RUNTIME_PYTHON:
		return program.Python, nil
	}
	return "", status.Errorf(codes.InvalidArgument, "unknown runtime %d", int32(r))
}

// prepare validates req and builds its job. Errors are gRPC statuses:
// INVALID_ARGUMENT for bad code, limits or env; NOT_FOUND for an unknown
// cached script; UNIMPLEMENTED for a runtime this server cannot run.
func (s *Server) prepare(req *sandboxv1.ExecuteRequest, tests bool) (*job, error) {
	rt, err := s.runtimeName(req.GetRuntime())
	if err != nil {
		return nil, err
	}
	code, cachedName, err := s.source(req)
	if err != nil {
		return nil, err
	}
	limits, err := resolveLimits(req.GetLimits(), req.TimeoutMs, s.cfg.Defaults, s.cfg.Ceilings)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	wreq, err := program.Build(program.Input{Runtime: rt, Code: code, Stdin: req.GetStdin(), Env: req.GetEnv(), Tests: tests, Node: s.cfg.Node})
	if err != nil {
		return nil, programError(err)
	}
	wreq.Rlimits = rlimitsFor(limits)
	return &job{runtime: rt, req: wreq, limits: limits, code: code, cachedName: cachedName,
		cacheable: !tests && cachedName == "" && s.cfg.Cache != nil && (rt == program.Goja || rt == program.Node)}, nil
}

// source returns the code to run: the request's code, or the cached script
// it names (NOT_FOUND when there is none, INVALID_ARGUMENT when the name
// matches several).
func (s *Server) source(req *sandboxv1.ExecuteRequest) (code, cachedName string, err error) {
	c, ok := req.GetSource().(*sandboxv1.ExecuteRequest_Cached)
	if !ok {
		return req.GetCode(), "", nil
	}
	if s.cfg.Cache == nil {
		return "", "", status.Errorf(codes.NotFound, "cached script %q not found: the script cache is disabled", c.Cached)
	}
	e, code, err := s.cfg.Cache.Find(c.Cached)
	switch {
	case errors.Is(err, cache.ErrNotFound):
		return "", "", status.Errorf(codes.NotFound, "cached script %q not found", c.Cached)
	case errors.Is(err, cache.ErrAmbiguous):
		return "", "", status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		return "", "", status.Error(codes.Internal, err.Error())
	}
	return code, e.Name, nil
}

// rlimitsFor returns the rlimits of a runtime process with limits l.
func rlimitsFor(l Limits) []*workerv1.Rlimit {
	var out []*workerv1.Rlimit
	if l.FileDescriptors > 0 {
		n := uint64(l.FileDescriptors)
		out = append(out, &workerv1.Rlimit{Resource: "NOFILE", Soft: n, Hard: n})
	}
	// Files written by the program are bounded by the workspace anyway;
	// RLIMIT_FSIZE makes a single runaway write fail early and clearly.
	fsz := uint64(l.WorkspaceBytes)
	return append(out, &workerv1.Rlimit{Resource: "FSIZE", Soft: fsz, Hard: fsz})
}

// programError maps program.Build's errors to gRPC statuses.
func programError(err error) error {
	var se *transform.SyntaxError
	switch {
	case errors.As(err, &se):
		return status.Error(codes.InvalidArgument, se.Error())
	case errors.Is(err, transform.ErrEmptyCode):
		return status.Error(codes.InvalidArgument, "code is empty")
	case errors.Is(err, program.ErrUnavailable):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, program.ErrUnknownRuntime), errors.Is(err, program.ErrBadEnv), errors.Is(err, program.ErrNoTestMode):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// submit validates req, admits it through the scheduler and starts it in
// the background. The returned execution is PENDING or RUNNING.
func (s *Server) submit(req *sandboxv1.ExecuteRequest) (*registry.Execution, error) {
	return s.submitMode(req, false)
}

// submitMode is submit; tests runs the code in test mode.
func (s *Server) submitMode(req *sandboxv1.ExecuteRequest, tests bool) (*registry.Execution, error) {
	j, err := s.prepare(req, tests)
	if err != nil {
		return nil, err
	}
	if err := s.admit(); err != nil {
		return nil, err
	}
	ticket, err := s.sched.Enqueue()
	if err != nil {
		s.running.Done()
		if errors.Is(err, scheduler.ErrQueueFull) {
			return nil, status.Errorf(codes.ResourceExhausted, "execution queue full (%d waiting)", s.cfg.QueueSize)
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	e := s.reg.Create(registry.Meta{
		CodePreview:    j.code,
		Runtime:        j.runtime,
		IsCached:       j.cachedName != "",
		CachedName:     j.cachedName,
		MaxOutputBytes: j.limits.OutputBytes,
	})
	r := &run{s: s, e: e, j: j, ticket: ticket, queued: time.Now()}
	s.runs.Store(e.ID(), r)
	r.ctx, r.cancel = context.WithCancel(s.runCtx)
	e.SetCancel(func() { r.stop(registry.ReasonCancelled) })
	go r.execute()
	return e, nil
}

// specFor is the sandbox a run with limits l needs; the warm pool holds
// sandboxes of specFor(Config.Defaults).
func specFor(l Limits) sandbox.Spec {
	return sandbox.Spec{
		Limits: cgroup.Limits{
			MemoryMaxBytes: l.MemoryBytes,
			PidsMax:        int64(l.Processes),
			CPUQuotaMicros: int64(l.CPUPercent) * 1000,
		},
		WorkspaceBytes:  l.WorkspaceBytes,
		FileDescriptors: int64(l.FileDescriptors),
	}
}

// queuePosition returns the execution's place in the queue (1 = next),
// 0 when it is not queued.
func (s *Server) queuePosition(id string) int {
	if v, ok := s.runs.Load(id); ok {
		return v.(*run).ticket.Position()
	}
	return 0
}

// run is one execution in flight.
type run struct {
	queued time.Time // admission: the queue wait starts here
	s      *Server
	e      *registry.Execution
	j      *job
	ticket *scheduler.Ticket
	ctx    context.Context
	cancel context.CancelFunc

	results []byte // test mode's results channel, at most maxResultsBytes

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

// cpuPollInterval is how often the CPU-time limit is checked: the cgroup
// counts CPU time but signals nothing, so it is read. The limit is thus
// exact to within one interval of the sandbox's CPUs.
const cpuPollInterval = 20 * time.Millisecond

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
		t := time.NewTicker(cpuPollInterval)
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
	defer r.s.running.Done()
	defer r.cancel()
	queued := r.queued
	defer r.s.runs.Delete(r.e.ID())
	if err := r.ticket.Wait(r.ctx); err != nil {
		r.finishStopped(time.Since(queued).Milliseconds(), "cancelled while queued")
		return
	}
	defer r.ticket.Release()
	queueWait := time.Since(queued).Milliseconds()
	if err := r.e.Start(); err != nil {
		return // already terminal: cancelled while queued
	}
	l := r.j.limits
	spec := specFor(l)
	var sb *sandbox.Sandbox
	var err error
	if r.s.pool != nil {
		sb = r.s.pool.Take(spec)
	}
	if sb == nil {
		sb, err = r.s.startSandbox(r.ctx, metrics.PathOnDemand, spec)
		if err == nil && r.s.log.IsDebug() {
			r.s.log.Debug("sandbox started", append([]any{"execution", r.e.ID(), "sandbox", sb.ID()}, sandbox.LogFields(sb.StartPhases())...)...)
		}
	}
	if err != nil {
		if r.stopReason() != 0 || r.ctx.Err() != nil {
			r.finishStopped(queueWait, "")
			return
		}
		r.s.log.Error("sandbox start failed", "execution", r.e.ID(), "error", err)
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
	if r.s.cfg.Kube != nil || r.s.cfg.Prometheus != nil {
		id, err := sb.ServeBroker(func(g *grpc.Server) {
			workerv1.RegisterHostProxyServer(g, &proxyServer{kube: r.s.cfg.Kube, prom: r.s.cfg.Prometheus})
		})
		if err != nil {
			r.destroy(sb)
			r.finish(registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal,
				Error: "serve the Kubernetes/Prometheus proxy: " + err.Error(), QueueWaitMs: queueWait, SandboxID: sb.ID()})
			return
		}
		r.j.req.ProxyBrokerId = id
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
	exit, runErr := sb.Run(r.ctx, r.j.req, func(ev *workerv1.RunEvent) {
		switch x := ev.GetEvent().(type) {
		case *workerv1.RunEvent_Stdout:
			r.e.Write(registry.Stdout, x.Stdout)
		case *workerv1.RunEvent_Stderr:
			r.e.Write(registry.Stderr, x.Stderr)
		case *workerv1.RunEvent_Results:
			// Bounded: the results channel is the program's too.
			if room := maxResultsBytes - len(r.results); room > 0 {
				r.results = append(r.results, x.Results[:min(room, len(x.Results))]...)
			}
		}
	})
	wall := time.Since(started).Milliseconds()
	timer.Stop()
	endWatch()
	usage, uerr := sb.Usage()
	if uerr != nil {
		r.s.log.Warn("read sandbox usage", "execution", r.e.ID(), "error", uerr)
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
		err := sb.Reset(r.s.runCtx)
		if err == nil {
			r.finish(res)
			r.s.pool.Recycle(sb)
			return
		}
		r.s.log.Warn("reset sandbox for reuse; destroying it", "execution", r.e.ID(), "sandbox", sb.ID(), "error", err)
	}
	r.destroy(sb)
	r.finish(res)
}

// recyclable reports whether sb may serve another execution after a reset:
// it came from the warm pool with uses left (pool.Reusable), and the run
// ended by the program's own exit, without the host proxy.
func (r *run) recyclable(sb *sandbox.Sandbox, res registry.Result, runErr error) bool {
	return r.s.pool != nil && runErr == nil && r.stopReason() == 0 &&
		res.Reason == registry.ReasonExited && r.j.req.GetProxyBrokerId() == 0 &&
		r.s.pool.Reusable(sb)
}

// destroy closes the sandbox. It runs before the result is published, so
// that a terminal execution has no process, cgroup, mount or socket left
// on the host: a client that sees the result may rely on it.
func (r *run) destroy(sb *sandbox.Sandbox) {
	if err := sb.Close(); err != nil {
		r.s.log.Warn("destroy sandbox", "execution", r.e.ID(), "sandbox", sb.ID(), "error", err)
	}
	if r.s.pool != nil {
		r.s.pool.Discard(sb)
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
	x := extra{limits: r.j.limits, runtime: r.j.runtime, results: r.results}
	if res.Success && res.State == registry.StateCompleted && r.j.cacheable {
		// Failed runs are never cached; the same code is stored once.
		entry, created, err := r.s.cfg.Cache.Save(r.j.code, time.Now())
		if err != nil {
			r.s.log.Warn("cache script", "execution", r.e.ID(), "error", err)
		} else if created {
			x.cached = &entry
		}
	}
	res.Extra = x
	r.e.Finish(res)
}

// classify turns how the run ended into a registry result. Precedence: an
// explicit stop (timeout, cancel) first, then an OOM kill (it wins over
// "killed by SIGKILL", DESIGN.md), then the worker's report.
func classify(stop registry.Reason, exit *workerv1.Exit, runErr error, u cgroup.Usage, l Limits) registry.Result {
	// A stopped run was ended by SIGKILL to its whole sandbox (cgroup).
	killed := registry.Result{ExitCode: -1, Signal: int(syscall.SIGKILL)}
	switch stop {
	case registry.ReasonTimeout:
		killed.State, killed.Reason, killed.Error = registry.StateTimeout, registry.ReasonTimeout, fmt.Sprintf("timed out after %d ms", l.TimeoutMs)
		return killed
	case registry.ReasonCancelled:
		killed.State, killed.Reason, killed.Error = registry.StateCancelled, registry.ReasonCancelled, "cancelled"
		return killed
	case registry.ReasonCPUTime:
		killed.State, killed.Reason, killed.Error = registry.StateFailed, registry.ReasonCPUTime, fmt.Sprintf("killed: CPU time limit of %d ms exceeded", l.CPUTimeMs)
		return killed
	}
	if u.OOMKills > 0 {
		res := registry.Result{State: registry.StateFailed, Reason: registry.ReasonMemory,
			Error: fmt.Sprintf("killed: memory limit of %d bytes exceeded (OOM kill)", l.MemoryBytes)}
		if exit != nil {
			res.ExitCode, res.Signal = int(exit.GetExitCode()), int(exit.GetSignal())
		}
		return res
	}
	if runErr != nil || exit == nil {
		msg := "worker lost"
		if runErr != nil {
			msg = "worker lost: " + runErr.Error()
		}
		return registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal, Error: msg}
	}
	if se := exit.GetStartError(); se != "" {
		return registry.Result{State: registry.StateFailed, Reason: registry.ReasonInternal, Error: "start program: " + se}
	}
	if sig := syscall.Signal(exit.GetSignal()); sig != 0 {
		res := registry.Result{State: registry.StateFailed, Reason: registry.ReasonSignal, Signal: int(sig), ExitCode: -1,
			Error: "killed by signal " + strings.ToUpper(sigName(sig))}
		if sig == syscall.SIGXCPU {
			res.Reason = registry.ReasonCPUTime
			res.Error = fmt.Sprintf("killed: CPU time limit of %d ms exceeded", l.CPUTimeMs)
		}
		return res
	}
	code := int(exit.GetExitCode())
	if code == 0 {
		return registry.Result{State: registry.StateCompleted, Reason: registry.ReasonExited, Success: true}
	}
	return registry.Result{State: registry.StateFailed, Reason: registry.ReasonExited, ExitCode: code,
		Error: fmt.Sprintf("exited with code %d", code)}
}

func sigName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "sigkill", syscall.SIGSEGV: "sigsegv", syscall.SIGSYS: "sigsys",
		syscall.SIGABRT: "sigabrt", syscall.SIGTERM: "sigterm", syscall.SIGXCPU: "sigxcpu",
		syscall.SIGXFSZ: "sigxfsz", syscall.SIGBUS: "sigbus", syscall.SIGPIPE: "sigpipe",
		syscall.SIGINT: "sigint", syscall.SIGHUP: "sighup",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("%d", int(s))
}
