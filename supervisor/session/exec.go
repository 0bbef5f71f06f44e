package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"syscall"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// ExecParams is what an exec asks for.
type ExecParams struct {
	// Runtime is program.Shell, Goja, Node or Python; "" = the sandbox's.
	Runtime string
	// Code is the command line (shell) or the program text.
	Code string
	// Argv, instead of Code, is a program and its arguments, run without
	// a shell (program.ArgvCommand): argv[0] without a '/' is found on
	// the exec's PATH. Runtime must be "" or program.Shell.
	Argv []string
	// Stdin is given on standard input first.
	Stdin []byte
	// StdinOpen keeps standard input open after Stdin, for WriteStdin.
	StdinOpen bool
	// Env is added to the base environment.
	Env map[string]string
	// Workdir is the working directory: absolute, or relative to
	// /workspace; "" = /workspace.
	Workdir string
	// TimeoutMs, OutputBytes and CPUTimeMs override the sandbox's exec
	// limits (nil = the sandbox's), within the server's ceilings.
	TimeoutMs, OutputBytes, CPUTimeMs *int64
}

// checkWorkdir refuses a workdir that is not a directory in the sandbox
// now, as a *FieldError: the program's start would fail on it, which is
// the caller's mistake, not execfarm's failure. The worker opens it as a
// directory (a listing of one entry), so links resolve exactly as the
// start's chdir resolves them, in the sandbox's root. A refusal other
// than "missing", "not a directory" or "too many links" (a directory it
// may not read, say) is left to the start. A directory removed between
// the check and the start fails the start, which the worker reports as
// the directory's (execution.startFailed: exited 126).
func (m *Manager) checkWorkdir(ctx context.Context, owner principal.Principal, id, dir string) error {
	_, _, _, err := m.ListFiles(ctx, owner, id, dir, 1)
	var fe *FileError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &fe):
		return err
	case errors.Is(fe, fs.ErrNotExist):
		return &FieldError{Field: "workdir", Reason: dir + " does not exist in the sandbox"}
	case errors.Is(fe, syscall.ENOTDIR):
		return &FieldError{Field: "workdir", Reason: dir + " is not a directory"}
	case errors.Is(fe, syscall.ELOOP):
		return &FieldError{Field: "workdir", Reason: dir + ": too many symbolic links"}
	}
	return nil
}

// Exec starts an exec in owner's sandbox id: an execution in the registry
// (owned by owner, tied to the sandbox) that runs in the sandbox beside
// its other execs, admitted through the scheduler like any execution. Its
// events (started, output, ended) go to the sandbox's log. The returned
// execution is PENDING or RUNNING. Errors: ErrNotFound, ErrNotReady;
// *FieldError (workdir: outside the root, or not a directory in the
// sandbox), *limits.FieldError (timeout_ms,
// max_output_bytes, cpu_time_ms); *QuotaError when the sandbox holds
// Config.MaxExecs execs; the Runner's (bad code, a full queue, shutting
// down). ctx bounds the preparation (the wait for a transform helper),
// not the exec.
func (m *Manager) Exec(ctx context.Context, owner principal.Principal, id string, p ExecParams) (*registry.Execution, error) {
	s, err := m.Get(owner, id)
	if err != nil {
		return nil, err
	}
	workdir := "."
	if p.Workdir != "" {
		workdir = p.Workdir
	}
	if workdir, err = ResolvePath("workdir", workdir); err != nil {
		return nil, err
	}
	if p.Workdir != "" {
		if err := m.checkWorkdir(ctx, owner, id, workdir); err != nil {
			return nil, err
		}
	}
	l, err := execLimits(s.limits, m.cfg.Ceilings, p)
	if err != nil {
		return nil, err
	}
	rt := p.Runtime
	if rt == "" {
		rt = s.runtime
	}
	if p.Argv != nil {
		if err := checkArgv(p); err != nil {
			return nil, err
		}
		rt = program.Shell // no runtime: the sandbox's does not apply
	}
	j, err := m.cfg.Runner.Prepare(ctx, execution.Input{Runtime: rt, Code: p.Code, Argv: p.Argv, Stdin: p.Stdin, Env: p.Env, Limits: l, Account: s.account, Client: s.client})
	if err != nil {
		return nil, err
	}
	j.Request.Dir = workdir
	x := &exec{s: s, runtime: rt, workdir: workdir}
	if p.StdinOpen {
		x.stdin = newStdinPipe(&stdinBudget{sandbox: &s.stdinHeld, server: &m.stdinHeld, serverMax: m.cfg.MaxStdinBytes})
	}
	j.Owner, j.SandboxID, j.Observer = s.owner, s.id, x
	if err := s.reserveExec(); err != nil {
		return nil, err
	}
	e, err := m.cfg.Runner.SubmitIn(placement{x}, j)
	if err != nil {
		s.releaseExec()
		return nil, err
	}
	return e, nil
}

// checkArgv refuses an exec's argv that cannot run, as a *FieldError:
// code beside it, an empty program name, a runtime other than shell.
// NUL bytes and lengths are program.Build's to refuse (a
// *program.NULError or *program.ArgError naming argv).
func checkArgv(p ExecParams) error {
	switch {
	case len(p.Argv) == 0 || p.Argv[0] == "":
		return &FieldError{Field: "argv", Reason: "argv[0], the program to run, is empty"}
	case p.Code != "":
		return &FieldError{Field: "argv", Reason: "give code (a shell command line) or argv (a program and its arguments), not both"}
	case p.Runtime != "" && p.Runtime != program.Shell:
		return &FieldError{Field: "runtime", Reason: fmt.Sprintf("argv runs a program directly; the runtime must be shell or unspecified, not %s", p.Runtime)}
	}
	return nil
}

// execLimits returns the sandbox's limits with an exec's overrides,
// checked as limits.Resolve checks a request's.
func execLimits(base, ceil limits.Set, p ExecParams) (limits.Set, error) {
	l := base
	for _, o := range []struct {
		field   string
		v       *int64
		min     int64
		ceiling int64
		dst     *int64
	}{
		{"timeout_ms", p.TimeoutMs, 1, ceil.TimeoutMs, &l.TimeoutMs},
		{"max_output_bytes", p.OutputBytes, 1, ceil.OutputBytes, &l.OutputBytes},
		{"cpu_time_ms", p.CPUTimeMs, limits.MinCPUTimeMs, ceil.CPUTimeMs, &l.CPUTimeMs},
	} {
		switch {
		case o.v == nil:
		case *o.v < o.min:
			return l, &limits.FieldError{Field: o.field, Value: *o.v, Reason: fmt.Sprintf("below the minimum %d", o.min)}
		case *o.v > o.ceiling:
			return l, &limits.FieldError{Field: o.field, Value: *o.v, Reason: fmt.Sprintf("above the server's ceiling %d", o.ceiling)}
		default:
			*o.dst = *o.v
		}
	}
	return l, nil
}

// reserveExec takes a place for an exec, within Config.MaxExecs.
func (s *Sandbox) reserveExec() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if max := s.m.cfg.MaxExecs; s.reserved >= max {
		return &QuotaError{Limit: "limit on execs held by one sandbox", Max: int64(max), Asked: int64(s.reserved + 1)}
	}
	s.reserved++
	s.armIdleLocked()
	return nil
}

// releaseExec gives an exec's place back.
func (s *Sandbox) releaseExec() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseExecLocked()
}

func (s *Sandbox) releaseExecLocked() {
	s.reserved--
	s.lastActivity = s.m.cfg.Now()
	if s.state == stateEnding && s.reserved == 0 {
		close(s.drained)
	}
	s.armIdleLocked()
}

// exec is one exec of a session sandbox, from its admission (Created) to
// its published result (Finished). It is the run's Observer; placement
// hands the run its sandbox.
type exec struct {
	s       *Sandbox
	stdin   *stdinPipe // nil: not kept open
	runtime string
	workdir string

	e      *registry.Execution // set by Created
	offset [2]int64            // bytes of output seen, per stream (the run's goroutine)

	mu      sync.Mutex
	running bool     // between Acquire and Release
	cpu     *CPUTime // the exec's CPU time once its program has ended
}

// Created registers the exec with its sandbox and logs its start; an exec
// admitted while the sandbox ends is cancelled at once.
func (x *exec) Created(e *registry.Execution) {
	x.e = e
	s := x.s
	s.mu.Lock()
	s.execs[e.ID()] = x
	ending, cause := s.state != stateReady, s.cancelCause
	s.mu.Unlock()
	s.m.execs.Store(e.ID(), x)
	s.appendEvent(&Event{Kind: EventExecStarted, ExecutionID: e.ID(), Runtime: x.runtime,
		CodePreview: e.Meta().CodePreview, Workdir: x.workdir})
	if ending {
		_, _ = e.CancelBecause(cause)
	}
}

// Output logs a chunk of the exec's output.
func (x *exec) Output(st registry.Stream, p []byte) {
	off := x.offset[st]
	x.offset[st] += int64(len(p))
	x.s.appendEvent(&Event{Kind: EventExecOutput, ExecutionID: x.e.ID(), Stream: st, Data: p, StreamOffset: off})
}

// Finished logs the exec's end and gives its place back, before anyone
// can see the exec's result (under the execution's lock: it calls
// nothing of e but ID).
func (x *exec) Finished(e *registry.Execution, res registry.Result) {
	s := x.s
	if x.stdin != nil {
		x.stdin.end()
	}
	s.appendEvent(&Event{Kind: EventExecEnded, ExecutionID: e.ID(), Result: res})
	s.m.execs.Delete(e.ID())
	s.mu.Lock()
	delete(s.execs, e.ID())
	if s.state == stateEnding && res.State == registry.StateCancelled {
		s.cancelled++
	}
	s.releaseExecLocked()
	s.mu.Unlock()
}

// placement hands an exec's run the session's sandbox and keeps it.
type placement struct{ x *exec }

// Acquire gives the run the sandbox; one that has begun ending is
// execution.ErrSandboxGone, and the exec ends CANCELLED with the end's
// cause (cancelCause): the sandbox's end cancels every exec it holds,
// but a queued one can reach a slot another's cancel freed before the
// end reaches it.
func (p placement) Acquire(context.Context, string, sandbox.Spec) (execution.Sandbox, error) {
	s := p.x.s
	s.mu.Lock()
	err := s.usableLocked()
	ending, cause := s.state != stateReady, s.cancelCause
	if err == nil {
		p.x.mu.Lock()
		p.x.running = true
		p.x.mu.Unlock()
	}
	s.mu.Unlock()
	switch {
	case ending:
		_, _ = p.x.e.CancelBecause(cause) // the cause, before the run finishes it CANCELLED
		return nil, fmt.Errorf("%w: %w", execution.ErrSandboxGone, err)
	case err != nil:
		return nil, err
	}
	return execBox(p), nil
}

// Kill kills the exec's processes, not the sandbox's others.
func (p placement) Kill(execution.Sandbox) error { return p.x.s.box.KillExec(p.x.e.ID()) }

// Release keeps the sandbox: the exec's processes are gone when its run
// returns (the mechanism ends them with the exec), so the result may be
// published at once.
func (p placement) Release(_ string, _ execution.Sandbox, _ bool, publish func()) {
	p.x.mu.Lock()
	p.x.running = false
	p.x.mu.Unlock()
	publish()
}

// execBox is the session's sandbox as one exec's run sees it.
type execBox struct{ x *exec }

func (b execBox) ID() string { return b.x.s.id }

func (b execBox) Run(ctx context.Context, req *workerv1.RunRequest, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	var stdin io.Reader
	if b.x.stdin != nil {
		stdin = b.x.stdin
	}
	exit, cpu, err := b.x.s.box.RunExec(ctx, b.x.e.ID(), req, stdin, onEvent)
	b.x.mu.Lock()
	b.x.cpu = &cpu
	b.x.mu.Unlock()
	return exit, err
}

// Usage is the sandbox's usage (peak memory, OOM kills: the kernel keeps
// them for the sandbox alone) with the CPU time of this exec's processes
// alone (Box.ExecCPU): the run's CPU-time limit and reported usage are the
// exec's, whatever the sandbox's other execs and their daemons use. Before
// the program starts it is 0.
func (b execBox) Usage() (cgroup.Usage, error) {
	u, err := b.x.s.box.Usage()
	if err != nil {
		return u, err
	}
	cpu, err := b.x.cpuTime()
	if err != nil {
		return cgroup.Usage{}, err
	}
	u.CPUUserMicros, u.CPUSystemMicros = cpu.UserMicros, cpu.SystemMicros
	return u, nil
}

// cpuTime is the CPU time of the exec's processes: the final figure once
// its program has ended, else read live (0 before it starts).
func (x *exec) cpuTime() (CPUTime, error) {
	x.mu.Lock()
	final := x.cpu
	x.mu.Unlock()
	if final != nil {
		return *final, nil
	}
	cpu, _, err := x.s.box.ExecCPU(x.e.ID())
	return cpu, err
}

// Uses is 0: the sandbox's peaks are its own, over its whole life.
func (b execBox) Uses() int { return 0 }

func (b execBox) Sample() { b.x.s.box.Sample() }

func (b execBox) ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error) {
	return b.x.s.box.ServeBroker(register, extra...)
}

// heldExec returns owner's exec id of a session sandbox, from its
// admission to its end. Errors: registry.ErrNotFound (wrapped) when no
// exec of owner's with that id is held (it may have ended, or not be a
// session's).
func (m *Manager) heldExec(owner principal.Principal, id string) (*exec, error) {
	v, ok := m.execs.Load(id)
	if !ok {
		return nil, fmt.Errorf("exec %s: %w", quote.Q(id), registry.ErrNotFound)
	}
	x := v.(*exec)
	if x.s.owner != owner.String() {
		return nil, fmt.Errorf("exec %s of another principal: %w", quote.Q(id), registry.ErrNotFound)
	}
	return x, nil
}

// WriteStdin gives p (at most MaxStdinBuffer bytes) to the standard input
// of owner's exec id, pending or running, and closes it when close is
// set; it waits for room until ctx ends (the program reads its input).
// One call at a time may wait per exec. Errors: registry.ErrNotFound
// (wrapped) when owner holds no such exec; ErrStdinClosed (the exec was
// not started with StdinOpen, or its input was closed); ErrExecNotRunning
// once it has ended; ErrStdinBusy (wrapped) while another call waits;
// *FieldError for p too large; *QuotaError when the sandbox's execs
// (MaxSandboxStdin) or every sandbox's (Config.MaxStdinBytes) hold too
// much unread input; ctx's error.
func (m *Manager) WriteStdin(ctx context.Context, owner principal.Principal, id string, p []byte, close bool) error {
	x, err := m.heldExec(owner, id)
	if err != nil {
		return err
	}
	if x.stdin == nil {
		return fmt.Errorf("exec %s was started without keep_stdin_open: %w", quote.Q(id), ErrStdinClosed)
	}
	err = x.stdin.write(ctx, p, close)
	if errors.Is(err, ErrStdinBusy) {
		return fmt.Errorf("exec %s: %w", quote.Q(id), err)
	}
	return err
}

// Signal sends sig to owner's running exec id. Errors:
// registry.ErrNotFound (wrapped); ErrExecNotRunning when its program has
// not started or has ended; the mechanism's.
func (m *Manager) Signal(owner principal.Principal, id string, sig syscall.Signal) error {
	x, err := m.heldExec(owner, id)
	if err != nil {
		return err
	}
	x.mu.Lock()
	running := x.running
	x.mu.Unlock()
	if !running {
		return fmt.Errorf("exec %s: %w", quote.Q(id), ErrExecNotRunning)
	}
	return x.s.box.Signal(id, sig)
}
