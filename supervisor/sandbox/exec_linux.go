package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// session is the state of a session sandbox (Spec.Session).
type session struct {
	// ctl is the supervisor's end of the descriptor channel on which each
	// exec's cgroup file goes to the worker (plugin.SandboxConfig.
	// ExecCgroupFD); -1 once closed.
	ctlMu sync.Mutex
	ctl   int

	// files holds a token per file call in flight
	// (MaxConcurrentFileCalls); lists one per listing
	// (MaxConcurrentListings).
	files, lists chan struct{}

	mu      sync.Mutex
	running int // execs started and not yet waited for
	seq     uint64
	// lingering are the cgroups of ended execs that a process they
	// started still holds (a daemon): removed once empty, or with the
	// sandbox.
	lingering []*cgroup.Exec
	closed    bool
}

// Exec is one exec of a session sandbox: a runtime process in its own
// process group and its own cgroup below the sandbox's payload cgroup,
// next to the sandbox's other execs. Its methods are safe for concurrent
// use; Wait must be called exactly once.
type Exec struct {
	sb     *Sandbox
	id     string
	cg     *cgroup.Exec
	stream workerv1.Worker_ExecClient
	cancel context.CancelFunc
	stop   func() bool // ends the kill-on-cancel of the caller's ctx
	pid    int
	// first is the Exit that ended the exec before it started (a start
	// error), returned by Wait.
	first *workerv1.Exit

	sendMu sync.Mutex
	ended  bool // sends refused: the exec has ended

	usageMu sync.Mutex
	usage   ExecUsage
	final   bool // usage holds the exec's final figures (finish)
}

// Exec starts one exec in a session sandbox and returns once its process
// runs (or failed to start: Wait then returns the Exit with its
// start_error). Its process runs as the sandbox user in its own process
// group and its own cgroup, with stdout and stderr streamed to Wait's
// onEvent. When ctx ends, the exec's whole cgroup is killed (the process
// tree, daemons included) and Wait returns. Errors: ErrNotSession,
// ErrClosed, ErrTooManyExecs (MaxConcurrentExecs run already), and the
// worker's or the kernel's when the exec's cgroup or call cannot be made.
func (s *Sandbox) Exec(ctx context.Context, req ExecRequest) (_ *Exec, err error) {
	ss := s.sess
	if ss == nil {
		return nil, ErrNotSession
	}
	if req.Run == nil {
		return nil, errors.New("sandbox: exec: no request")
	}
	for _, rl := range req.Run.GetRlimits() {
		if rl.GetResource() == "NOFILE" && rl.GetHard() < MinSessionFileDescriptors {
			return nil, fmt.Errorf("%w: NOFILE %d, at least %d", ErrFileDescriptors, rl.GetHard(), MinSessionFileDescriptors)
		}
	}
	ss.mu.Lock()
	switch {
	case ss.closed:
		ss.mu.Unlock()
		return nil, ErrClosed
	case ss.running >= MaxConcurrentExecs:
		ss.mu.Unlock()
		return nil, ErrTooManyExecs
	}
	ss.running++
	ss.seq++
	token := ss.seq
	ss.mu.Unlock()
	e := &Exec{sb: s, id: "x" + strconv.FormatUint(token, 10)}
	defer func() {
		if err != nil {
			if e.cg != nil {
				_ = e.cg.Kill(s.workerPid())
			}
			e.finish()
		}
	}()
	s.sweepLingering()
	if !req.inPayload {
		cg, files, err := s.cg.NewExec(e.id, s.forkerInPayload)
		if err != nil {
			return nil, fmt.Errorf("sandbox: exec: %w", err)
		}
		e.cg = cg
		err = ss.send(token, files)
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: exec: hand the exec's cgroup to the worker: %w", err)
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	if e.stream, err = s.worker.Exec(sctx); err != nil {
		return nil, sessionError("exec", "", err)
	}
	start := &workerv1.ExecStart{Request: req.Run, StdinOpen: req.StdinOpen}
	if e.cg != nil {
		start.CgroupToken = token
	}
	if err := e.stream.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Start{Start: start}}); err != nil {
		return nil, sessionError("exec", "", e.recvError(err))
	}
	ev, err := e.stream.Recv()
	if err != nil {
		return nil, sessionError("exec", "", err)
	}
	switch x := ev.GetEvent().(type) {
	case *workerv1.RunEvent_Started:
		e.pid = int(x.Started.GetPid())
	case *workerv1.RunEvent_Exit:
		e.first = x.Exit
	default:
		return nil, fmt.Errorf("sandbox: exec: the worker's first event is %T", x)
	}
	e.stop = context.AfterFunc(ctx, func() { _ = e.Kill() })
	return e, nil
}

// recvError returns the call's status when a Send failed because the
// worker ended the call (Send reports only io.EOF then).
func (e *Exec) recvError(sendErr error) error {
	if sendErr != io.EOF {
		return sendErr
	}
	if _, err := e.stream.Recv(); err != nil && err != io.EOF {
		return err
	}
	return sendErr
}

// ID names the exec within its sandbox ("x1", "x2"...: also its cgroup's
// name below the payload).
func (e *Exec) ID() string { return e.id }

// Pid is the exec's runtime process in the sandbox's pid namespace (the
// leader of its process group); 0 when it did not start.
func (e *Exec) Pid() int { return e.pid }

// Wait calls onEvent for every stdout, stderr and results chunk of the
// exec, in order, and returns the Exit the worker reported once the
// exec's process has exited and its output is drained (a daemon holding
// the pipes gets 200 ms). A daemon the exec started keeps running (and its
// cgroup with it) until it ends, Kill, or the sandbox's Close. It returns
// an error when the call broke (the sandbox was closed or killed). Usage
// is valid once it has returned.
func (e *Exec) Wait(onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	defer e.finish()
	if e.first != nil {
		return e.first, nil
	}
	for {
		ev, err := e.stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, sessionError("exec", "", err)
		}
		if x := ev.GetExit(); x != nil {
			if e.cg == nil {
				// No cgroup of its own: wait4's figures, the best there are.
				u := x.GetUsage()
				e.usageMu.Lock()
				e.usage.CPUUserMicros, e.usage.CPUSystemMicros = u.GetCpuUserMicros(), u.GetCpuSystemMicros()
				e.usageMu.Unlock()
			}
			return x, nil
		}
		onEvent(ev)
	}
}

// Usage returns the exec's usage (see ExecUsage); valid after Wait.
func (e *Exec) Usage() ExecUsage {
	e.usageMu.Lock()
	defer e.usageMu.Unlock()
	return e.usage
}

// CPU returns the CPU time, user and system in µs, that the exec's
// processes have used so far (ExecUsage says what is counted), read live
// from its cgroup while it runs; after Wait the final figures. It may be
// called at any time, from any goroutine. Errors are *CgroupError.
func (e *Exec) CPU() (userMicros, systemMicros int64, err error) {
	e.usageMu.Lock()
	defer e.usageMu.Unlock()
	if e.final || e.cg == nil {
		return e.usage.CPUUserMicros, e.usage.CPUSystemMicros, nil
	}
	userMicros, systemMicros, err = e.cg.CPU()
	if err != nil {
		return 0, 0, &CgroupError{Op: CgroupRead, Err: err}
	}
	return userMicros, systemMicros, nil
}

// finish ends the exec's hold on the sandbox: the call, its slot, and its
// cgroup (kept among the lingering ones while a daemon holds it).
func (e *Exec) finish() {
	e.sendMu.Lock()
	e.ended = true
	e.sendMu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	if e.cancel != nil {
		e.cancel()
	}
	ss := e.sb.sess
	e.usageMu.Lock()
	if e.cg != nil {
		// Read before the cgroup goes; a failed read leaves 0.
		e.usage.CPUUserMicros, e.usage.CPUSystemMicros, _ = e.cg.CPU()
		e.usage.PidsPeak, e.usage.PidsPeakKnown = e.cg.PidsPeak()
	}
	e.final = true
	e.usageMu.Unlock()
	if e.cg != nil {
		if err := e.cg.Remove(); err != nil {
			ss.mu.Lock()
			ss.lingering = append(ss.lingering, e.cg)
			ss.mu.Unlock()
		}
	}
	ss.mu.Lock()
	ss.running--
	ss.mu.Unlock()
}

// WriteStdin sends p to the exec's stdin (ExecRequest.StdinOpen), in
// chunks of at most ChunkBytes; it blocks while the worker holds 1 MiB the
// process has not read (gRPC flow control). Errors: ErrExecEnded, or
// ErrExecEnded too once CloseStdin was called.
func (e *Exec) WriteStdin(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), ChunkBytes)
		if err := e.send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Stdin{Stdin: p[:n]}}); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// CloseStdin ends the exec's stdin (end of file once what was written is
// read).
func (e *Exec) CloseStdin() error {
	return e.send(&workerv1.ExecInput{Input: &workerv1.ExecInput_CloseStdin{CloseStdin: true}})
}

// Signal sends sig (1..31, ErrInvalidSignal otherwise) to the exec's
// process group: its runtime process and the descendants that stayed in
// the group (a daemon that called setsid is reached only by Kill).
func (e *Exec) Signal(sig syscall.Signal) error {
	if sig < 1 || sig > 31 {
		return fmt.Errorf("%w: %d", ErrInvalidSignal, int(sig))
	}
	return e.send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Signal{Signal: int32(sig)}})
}

func (e *Exec) send(in *workerv1.ExecInput) error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.ended || e.first != nil {
		return ErrExecEnded
	}
	if err := e.stream.Send(in); err != nil {
		return ErrExecEnded
	}
	return nil
}

// Kill kills every process of the exec, daemons included, through its
// cgroup, and waits until they are gone; the sandbox and its other execs
// go on. Wait then returns the exit (killed by SIGKILL). It does not wait
// for Wait.
func (e *Exec) Kill() error {
	if e.cg == nil {
		return e.Signal(9) // in the payload (a benchmark's baseline): its process group
	}
	if err := e.cg.Kill(e.sb.workerPid()); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// RunningExecs returns how many execs of a session sandbox have started
// and not yet been waited for.
func (s *Sandbox) RunningExecs() int {
	if s.sess == nil {
		return 0
	}
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return s.sess.running
}

// Session reports whether s is a session sandbox (Spec.Session).
func (s *Sandbox) Session() bool { return s.sess != nil }

// workerPid is the worker's host pid (0 when unknown).
func (s *Sandbox) workerPid() int {
	if s.runner == nil || s.runner.proc == nil {
		return 0
	}
	return s.runner.proc.Pid
}

// sweepLingering removes the cgroups of ended execs that are empty now.
func (s *Sandbox) sweepLingering() {
	ss := s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	kept := ss.lingering[:0]
	for _, cg := range ss.lingering {
		if cg.Remove() != nil {
			kept = append(kept, cg)
		}
	}
	clear(ss.lingering[len(kept):])
	ss.lingering = kept
}

// newSession makes the descriptor channel; workerEnd goes to the worker.
func newSession() (*session, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return &session{ctl: fds[0], files: make(chan struct{}, MaxConcurrentFileCalls), lists: make(chan struct{}, MaxConcurrentListings)}, os.NewFile(uintptr(fds[1]), "exec-cgroups"), nil
}

// send hands files (cgroup.Manager.NewExec's) to the worker under token,
// in one message.
func (ss *session) send(token uint64, files []*os.File) error {
	ss.ctlMu.Lock()
	defer ss.ctlMu.Unlock()
	if ss.ctl < 0 {
		return ErrClosed
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], token)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	for {
		err := unix.Sendmsg(ss.ctl, b[:], unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("sendmsg", err)
		}
		return nil
	}
}

// fileTurn waits for a file call's turn (MaxConcurrentFileCalls) and
// returns its release, or ctx's error.
func (ss *session) fileTurn(ctx context.Context) (func(), error) { return turn(ctx, ss.files) }

// listTurn waits for a listing's turn (MaxConcurrentListings) and
// returns its release, or ctx's error.
func (ss *session) listTurn(ctx context.Context) (func(), error) { return turn(ctx, ss.lists) }

// turn takes one of the tokens of tokens (a channel of that capacity),
// waiting while all are taken, and returns the function that gives it
// back, or ctx's error.
func turn(ctx context.Context, tokens chan struct{}) (func(), error) {
	select {
	case tokens <- struct{}{}:
		return func() { <-tokens }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// isClosed reports whether close has begun.
func (ss *session) isClosed() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closed
}

// close refuses new execs and closes the descriptor channel.
func (ss *session) close() {
	ss.mu.Lock()
	ss.closed = true
	ss.mu.Unlock()
	ss.ctlMu.Lock()
	if ss.ctl >= 0 {
		unix.Close(ss.ctl)
		ss.ctl = -1
	}
	ss.ctlMu.Unlock()
}

// sessionDialOptions bound the flow control windows of the connection to
// a session sandbox's worker (sessionWindowBytes).
func sessionDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(sessionWindowBytes),
		grpc.WithInitialConnWindowSize(sessionConnWindowBytes),
	}
}
