package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execfarm/execfarm/internal/procstatus"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/isolation/seccomp"
	"github.com/execfarm/execfarm/isolation/sysvipc"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// Sandbox is one live sandbox. Its methods are safe for concurrent use.
type Sandbox struct {
	id      string
	dir     string
	cg      *cgroup.Manager
	ids     namespace.IDRange
	release func()
	client  *goplugin.Client
	worker  *plugin.Client
	stderr  *boundedBuffer
	payload *os.File // the payload cgroup's cgroup.procs, until the worker has it
	// payloadTasks is the payload's tasks file (v1), until the worker's
	// forking thread has joined the payload through it.
	payloadTasks *os.File
	runner       *workerRunner
	phases       []Phase
	// forkerInPayload: the worker's forking thread is in the payload
	// cgroup (v1), one of its tasks.
	forkerInPayload bool
	uses            atomic.Int32 // Runs so far
	keptPid         atomic.Int32 // the last Run's workerv1.Exit.kept_pid
	// background: started by StartInBackground and not yet Foreground.
	background bool
	// sess is the state of a session sandbox (Spec.Session); nil for a
	// single-use one.
	sess *session
	// sessWorkerEnd is the worker's end of the session's descriptor
	// channel, until the worker has it.
	sessWorkerEnd *os.File

	closeOnce sync.Once
	closeErr  error
}

// ID returns the sandbox's unique identity ("sb-" and 16 hex digits).
func (s *Sandbox) ID() string { return s.id }

// HostUID returns the first host uid of the sandbox's id range.
func (s *Sandbox) HostUID() uint32 { return s.ids.HostID }

// CgroupPath returns the sandbox cgroup's path.
func (s *Sandbox) CgroupPath() string { return s.cg.Path() }

// Start creates a sandbox: cgroup with spec's limits, host directory,
// worker forked into fresh namespaces and placed in the cgroup, go-plugin
// handshake. On error nothing of the sandbox is left behind.
func Start(ctx context.Context, cfg *Config, spec Spec) (*Sandbox, error) {
	return start(ctx, cfg, spec, false)
}

// StartInBackground is Start for a sandbox that nobody waits for (the warm
// pool's): its cgroup has the lowest CPU weight
// (cgroup.BackgroundCPUWeight), so that its start-up takes only the CPU
// that running executions leave over. Foreground gives it the default
// weight; call it before the sandbox serves an execution.
func StartInBackground(ctx context.Context, cfg *Config, spec Spec) (*Sandbox, error) {
	return start(ctx, cfg, spec, true)
}

// Foreground gives a sandbox started by StartInBackground the default CPU
// weight. It does nothing for one started by Start, or twice. Not safe
// for concurrent use: the one execution that holds the sandbox calls it.
// Errors are *CgroupError (CgroupWrite).
func (s *Sandbox) Foreground() error {
	if !s.background {
		return nil
	}
	return s.SetBackground(false)
}

// SetBackground gives the sandbox the background CPU weight
// (cgroup.BackgroundCPUWeight, a tenth of the default: its processes get
// the CPU that busier siblings leave over) when on, and the default weight
// otherwise. A session sandbox holds the background weight while no exec
// runs in it, so that what its execs left running (a daemon, a
// background job) cannot take CPU from running executions, which the
// --max-concurrent slots bound. Not safe for concurrent use with itself or
// Foreground. Errors are ErrClosed for a session sandbox being closed
// (its cgroup may be gone) and *CgroupError (CgroupWrite).
func (s *Sandbox) SetBackground(on bool) error {
	w := uint64(cgroup.DefaultCPUWeight)
	if on {
		w = cgroup.BackgroundCPUWeight
	}
	if err := s.cg.SetCPUWeight(w); err != nil {
		if s.sess != nil && s.sess.isClosed() { // Close marks it before the cgroup goes
			return ErrClosed
		}
		return &CgroupError{Op: CgroupWrite, Err: err}
	}
	s.background = on
	return nil
}

func start(ctx context.Context, cfg *Config, spec Spec, background bool) (_ *Sandbox, err error) {
	if cfg.IDs == nil {
		return nil, errors.New("sandbox: Config.IDs is nil")
	}
	if spec.Session && spec.Limits.PidsMax <= 0 {
		// Each exec's cgroup is a child of the payload, which exists
		// only with a pids limit.
		return nil, errors.New("sandbox: a session sandbox needs a pids limit (Spec.Limits.PidsMax)")
	}
	if spec.Session && spec.FileDescriptors > 0 && spec.FileDescriptors < MinSessionFileDescriptors {
		return nil, fmt.Errorf("%w: %d, at least %d", ErrFileDescriptors, spec.FileDescriptors, MinSessionFileDescriptors)
	}
	s := &Sandbox{id: newID(), stderr: &boundedBuffer{max: 8 << 10}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	last := time.Now()
	mark := func(name string) {
		now := time.Now()
		s.phases = append(s.phases, Phase{Name: name, Duration: now.Sub(last)})
		last = now
	}
	s.ids, s.release, err = cfg.IDs.Acquire()
	if err != nil {
		return nil, err
	}
	s.dir = filepath.Join(cfg.stateDir(), "sb", s.id)
	if err := os.MkdirAll(s.dir, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// Parents must be traversable by the sandbox's (unprivileged) root.
	_ = os.Chmod(cfg.stateDir(), 0o711)
	_ = os.Chmod(filepath.Dir(s.dir), 0o711)
	root := filepath.Join(s.dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	hostRoot := int(s.ids.HostUID(0))
	if err := os.Chown(root, hostRoot, hostRoot); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// The program's processes live in the payload child cgroup, which
	// holds the pids limit; the sandbox cgroup allows WorkerPidsReserve
	// more, so that a fork bomb never starves the worker of threads.
	limits := spec.Limits
	if limits.PidsMax > 0 {
		limits.PidsMax += WorkerPidsReserve
	}
	if background {
		limits.CPUWeight = cgroup.BackgroundCPUWeight
		s.background = true
	}
	// An exec's OOM kill must not take the session's worker and other
	// execs with it (v2's memory.oom.group would).
	limits.NoOOMGroup = spec.Session
	mark("prepare")
	s.cg, err = cgroup.New(cfg.Cgroup, s.id, limits)
	if err != nil {
		return nil, &CgroupError{Op: CgroupCreate, Err: err}
	}
	if spec.Limits.PidsMax > 0 {
		// v1: the worker's forking thread joins the payload, so that
		// runtime processes are born there; it counts as one task.
		byThread := s.cg.Mode() == cgroup.V1 && !cfg.PlaceByGate
		pidsMax := spec.Limits.PidsMax
		if byThread {
			pidsMax++
		}
		if s.payload, err = s.cg.NewPayload(pidsMax); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if byThread {
			if s.payloadTasks, err = s.cg.PayloadTasks(); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			s.forkerInPayload = true
		}
		// The worker got its copies at fork; the supervisor's close
		// once the sandbox has started (below) or failed (Close).
	}
	mark("cgroup")
	wc := plugin.SandboxConfig{
		ID: s.id, Root: root, GojaBinary: cfg.gojaBinary(),
		WorkspaceBytes: spec.WorkspaceBytes, TmpBytes: spec.TmpBytes, ShmBytes: spec.ShmBytes,
		Binds:   cfg.Binds,
		Seccomp: !cfg.NoSeccomp,
		Session: spec.Session,
	}
	var dialOptions []grpc.DialOption
	if spec.Session {
		if s.sess, s.sessWorkerEnd, err = newSession(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		dialOptions = sessionDialOptions()
	}
	if wc.Seccomp {
		if wc.SeccompFilter, err = seccomp.Encoded(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Name: "sandbox", Level: hclog.Warn, Output: os.Stderr, Exclude: ExpectedExit})
	}
	s.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		Plugins:          plugin.Plugins(nil),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SkipHostEnv:      true,
		// Broker connections ride the plugin's own socket: after
		// pivot_root the worker could not reach a new host socket.
		GRPCBrokerMultiplex: cfg.Broker,
		UnixSocketConfig:    &goplugin.UnixSocketConfig{TempDir: s.dir},
		GRPCDialOptions:     dialOptions,
		StartTimeout:        cfg.startTimeout(),
		Logger:              logger.Named(s.id),
		Stderr:              s.stderr,
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			return newRunner(s, cfg, cmd, socketDir, wc)
		},
	})
	rpc, err := s.client.Client()
	for _, f := range []**os.File{&s.payload, &s.payloadTasks, &s.sessWorkerEnd} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: start worker: %w%s", err, s.stderr.suffix())
	}
	if r := s.runner; r != nil && !r.forked.IsZero() {
		// go-plugin's set-up before the fork counts as the fork.
		s.phases = append(s.phases, Phase{Name: "fork", Duration: r.forked.Sub(last)})
		last = r.forked
	}
	mark("handshake")
	if err := s.limitIPC(spec.ShmBytes); err != nil {
		return nil, err
	}
	mark("ipc")
	raw, err := rpc.Dispense(plugin.Name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: dispense worker: %w", err)
	}
	s.worker = raw.(*plugin.Client)
	mark("dispense")
	return s, nil
}

// limitIPC bounds the System V IPC of the sandbox's IPC namespace to
// the size of its /dev/shm, shmBytes (0 = rootfs.DefaultTmpfsBytes), and
// small fixed message queue and semaphore bounds (sysvipc.LimitsFor),
// through the worker's pidfd, so that a gone worker's reused pid cannot
// redirect it. Its moment: the worker is in its namespaces and has
// finished its own set-up (the handshake), and no program has run in
// them yet, since every Run, Prepare and Exec comes after Start returns.
// The limits hold for the namespace's life, across Reset (which removes
// the objects, not the limits); the worker's user namespace root could
// change them from Linux 6.9, the sandbox's programs cannot (uid 1000,
// no capabilities, /proc/sys read-only). A sandbox whose limits did not
// take does not start.
func (s *Sandbox) limitIPC(shmBytes int64) error {
	l := sysvipc.LimitsFor(shmBytes, int64(os.Getpagesize()))
	err := s.runner.proc.WithPidFD(func(pidfd int) error { return sysvipc.Apply(pidfd, l) })
	if err != nil {
		return fmt.Errorf("sandbox: bound System V IPC of the sandbox: %w%s", err, s.stderr.suffix())
	}
	return nil
}

// StartPhases returns the supervisor's side of the sandbox's start-up, in
// order: prepare (uid range, host directory), cgroup (sandbox and payload
// cgroups with their limits), fork (go-plugin set-up, clone into the
// namespaces, v1 placement), handshake (from the fork to go-plugin's
// connection: the worker's exec and isolation, see WorkerPhases), ipc
// (the System V IPC limits written into the sandbox's IPC namespace,
// limitIPC), dispense.
func (s *Sandbox) StartPhases() []Phase { return append([]Phase(nil), s.phases...) }

// WorkerPhases asks the worker for its side of the start-up
// (Worker.Startup), in order: exec (from the fork: exec, Go runtime and
// package init), sync (v1: waiting for placement), listen (go-plugin's
// socket), rootfs, namespaces (hostname, loopback), capabilities
// (descriptors, capability sets on every thread), landlock (with
// no_new_privs), seccomp. They run within the handshake phase.
func (s *Sandbox) WorkerPhases(ctx context.Context) ([]Phase, error) {
	resp, err := s.worker.Startup(ctx, &workerv1.StartupRequest{})
	if err != nil {
		return nil, fmt.Errorf("sandbox: worker start-up phases: %w", err)
	}
	out := make([]Phase, 0, len(resp.GetPhases()))
	for _, p := range resp.GetPhases() {
		out = append(out, Phase{Name: p.GetName(), Duration: time.Duration(p.GetMicros()) * time.Microsecond})
	}
	return out, nil
}

// Run runs one runtime process in the sandbox and calls onEvent for every
// output chunk, in order. It returns the Exit the worker reported, or an
// error when the stream broke (for example because the sandbox was
// killed). Cancelling ctx makes the worker kill the process. A session
// sandbox answers ErrNotSession: it serves Exec.
func (s *Sandbox) Run(ctx context.Context, req *workerv1.RunRequest, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	if s.sess != nil {
		return nil, ErrNotSession
	}
	s.uses.Add(1)
	// Until this run's exit names it, no process is known idle: a run
	// that fails mid-way leaves none that Quiet may accept (the kept
	// process may still be running this run's program).
	s.keptPid.Store(0)
	stream, err := s.worker.Run(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("sandbox: run: %w", err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("sandbox: run: %w", err)
		}
		if e := ev.GetExit(); e != nil {
			s.keptPid.Store(e.GetKeptPid())
			return e, nil
		}
		onEvent(ev)
	}
}

// Uses returns how many Runs the sandbox has served.
func (s *Sandbox) Uses() int { return int(s.uses.Load()) }

// ServeBroker serves the services register adds to a gRPC server made
// with extra's options to the worker over the go-plugin broker
// (Config.Broker must be set) and returns the broker id the worker dials.
// The service lives as long as the sandbox.
func (s *Sandbox) ServeBroker(register func(*grpc.Server), extra ...grpc.ServerOption) (uint32, error) {
	if s.worker == nil || s.worker.Broker == nil {
		return 0, errors.New("sandbox: no broker")
	}
	id := s.worker.Broker.NextId()
	go s.worker.Broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		g := grpc.NewServer(append(opts, extra...)...)
		register(g)
		return g
	})
	return id, nil
}

// Prepare has the worker fork the runtime process of req ahead of its Run
// (see the worker's Prepare): a Run of the same shape then starts nothing.
func (s *Sandbox) Prepare(ctx context.Context, req *workerv1.RunRequest) error {
	if _, err := s.worker.Prepare(ctx, req); err != nil {
		return fmt.Errorf("sandbox: prepare: %w", err)
	}
	return nil
}

// Kill kills every process of the sandbox (its cgroup), the worker
// included, and waits until they are gone. Output already received is not
// affected.
func (s *Sandbox) Kill() error { return s.cg.Kill() }

// Quiet reports whether no process of the sandbox but its worker is left
// to run (cgroup.Manager.Others): a single-use run's result may then be
// published before the sandbox is reset or destroyed, since nothing of
// the run can run any more. The one other process it accepts is the kept
// goja process the last Run's exit named (workerv1.Exit.kept_pid), idle
// since its reply: the cgroup must list that process alone beside the
// worker, found by its pid in the sandbox's pid namespace (the last
// NSpid of /proc/PID/status). It is false, with no error, when other
// processes are listed (a program's background job, a prepared runtime
// being killed) or the worker is not known; the caller then kills or
// resets the sandbox before it publishes.
func (s *Sandbox) Quiet() (bool, error) {
	if s.runner == nil || s.runner.proc == nil || s.cg == nil {
		return false, nil
	}
	// The worker is not reaped before Close (runner.release): its pid
	// names it, and no other process, until then.
	others, err := s.cg.Others(s.runner.proc.Pid)
	if err != nil || others == nil {
		return false, err
	}
	switch kept := s.keptPid.Load(); {
	case len(others) == 0:
		return true, nil
	case len(others) == 1 && kept > 0:
		return innermostPid(others[0]) == int(kept), nil
	}
	return false, nil
}

// innermostPid is process pid's pid in its innermost pid namespace (the
// last field of NSpid in /proc/PID/status), 0 when it cannot be read.
func innermostPid(pid int) int {
	v, err := procstatus.Field(pid, "NSpid")
	f := strings.Fields(v)
	if err != nil || len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

// Sample records the sandbox's pids count for a peak the cgroup cannot
// keep (see cgroup.Manager.Sample and ResetPeaks).
func (s *Sandbox) Sample() { s.cg.Sample() }

// Usage reads the sandbox's resource usage from its cgroup. The pids peak
// counts the program's processes: not the worker's forking thread, which
// sits in the payload cgroup on v1 (PayloadTasks).
func (s *Sandbox) Usage() (cgroup.Usage, error) {
	u, err := s.cg.Usage()
	if err != nil {
		return u, &CgroupError{Op: CgroupRead, Err: err}
	}
	if s.forkerInPayload {
		u.PidsPeak = max(0, u.PidsPeak-1)
	}
	return u, nil
}

// Exited reports whether the worker process has exited (killed with its
// fork server, say): such a sandbox can serve nothing and must be closed.
func (s *Sandbox) Exited() bool {
	return s.runner != nil && s.runner.proc != nil && s.runner.proc.Exited()
}

// WorkerDone is closed once the worker process has exited, for whatever
// reason (Close's kill, an OOM kill, its fork server's end); nil, which
// never closes, for a sandbox that has no worker.
func (s *Sandbox) WorkerDone() <-chan struct{} {
	if s.runner == nil || s.runner.proc == nil {
		return nil
	}
	return s.runner.proc.Done()
}

// Close destroys the sandbox: kills its processes, ends the plugin client,
// deletes the cgroup and the host directory, waits until the fork server
// has reaped the worker, and frees the uid range (only once the cgroup is
// gone; the error says so otherwise). Idempotent.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.sess != nil {
			s.sess.close()
		}
		if s.runner != nil {
			// Fast path: killing the pid namespace's init empties the
			// sandbox; the cgroup kill in Delete then finds nothing to
			// freeze.
			s.runner.killWorker(time.Second)
		}
		// The three steps below are independent once the processes are
		// gone (Delete kills whatever is left first): run them at once.
		var wg sync.WaitGroup
		var cgErr, dirErr error
		if s.client != nil {
			wg.Go(s.client.Kill)
		}
		if s.cg != nil {
			wg.Go(func() {
				if err := s.cg.Delete(); err != nil {
					cgErr = &CgroupError{Op: CgroupRemove, Err: err}
				}
			})
		}
		if s.dir != "" {
			wg.Go(func() { dirErr = os.RemoveAll(s.dir) })
		}
		wg.Wait()
		errs = append(errs, cgErr, dirErr)
		if s.payload != nil {
			s.payload.Close()
		}
		if s.payloadTasks != nil {
			s.payloadTasks.Close()
		}
		if s.sessWorkerEnd != nil {
			s.sessWorkerEnd.Close()
		}
		if s.runner != nil {
			errs = append(errs, s.runner.release())
		}
		// The uid range goes back only once nothing of the sandbox can run:
		// its cgroup is gone (rmdir succeeds only on an empty cgroup; a
		// worker not yet reaped is a zombie, which runs nothing). Otherwise
		// it stays taken, one slot fewer, rather than go to a new sandbox
		// that could share uids with what is left.
		if s.release != nil && (s.cg == nil || cgErr == nil) {
			s.release()
		} else if s.release != nil {
			errs = append(errs, fmt.Errorf("sandbox: %s keeps its uid range %d: its cgroup could not be removed", s.id, s.ids.HostID))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// ExpectedExit drops go-plugin's report that the worker exited: every
// sandbox ends by being killed, so the report says nothing.
func ExpectedExit(_ hclog.Level, msg string, _ ...any) bool {
	return msg == "plugin process exited" || msg == "plugin failed to exit gracefully"
}

// boundedBuffer keeps the first max bytes of the worker's stderr, for
// start-up error messages.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *boundedBuffer) suffix() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	if s == "" {
		return ""
	}
	return ": worker said: " + s
}
