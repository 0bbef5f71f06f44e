package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/execfarm/execfarm/isolation/oomscore"

	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/keep"
)

// drainAfterExit bounds how long Run keeps reading output after the
// runtime process exited while a descendant still holds its pipes open.
// The supervisor kills the whole sandbox right after Run returns.
const drainAfterExit = 200 * time.Millisecond

// readyFD and readyEnv pass a prepared runtime the descriptor it closes
// once it waits for its program (runtime/goja.ReadyEnv); readyTimeout
// bounds Prepare's wait for it.
const (
	readyFD      = 5
	readyEnv     = "EXECFARM_READY_FD"
	readyTimeout = 5 * time.Second
)

// chunkSize is the largest output chunk read from a pipe in one go.
const chunkSize = 32 << 10

// server implements workerv1.WorkerServer. A single-use sandbox's worker
// runs one runtime process at a time (Run); a session sandbox's runs up to
// plugin.MaxConcurrentExecs at once (Exec) and serves file operations. As
// pid 1 of the sandbox it reaps every child.
type server struct {
	workerv1.UnimplementedWorkerServer

	runMu sync.Mutex // one Run at a time

	// payload is the payload cgroup's cgroup.procs (nil: none); every
	// runtime process is moved there before it runs, unless bornInPayload.
	payload *os.File
	// bornInPayload: the forking thread is in the payload cgroup (v1), so
	// runtime processes are born there: no gate, no move.
	bornInPayload bool
	// forker forks every runtime process.
	forker forker
	// oom makes every runtime process the OOM killer's first choice,
	// before the worker (isolation/oomscore).
	oom *oomscore.Forker
	// broker reaches services the supervisor serves (the HostProxy).
	broker *goplugin.GRPCBroker
	// prepared is the process Prepare forked (or a kept one it took
	// back), until a Run takes it.
	prepared *process
	// kept is an idle kept runtime process (RunRequest.keep) after the Run
	// it served, until Prepare or a Run of its shape takes it, a Run of
	// another shape kills it, or Reset finds another process beside it.
	kept *process
	// startup times the worker's start-up (Startup).
	startup phases

	// session: a session sandbox (Exec, file calls; no Run, Prepare,
	// Reset). See session_linux.go and files_linux.go.
	session bool
	// payloadTasks is the payload cgroup's tasks file, kept open in a
	// session sandbox on cgroup v1 (bornInPayload): the forking thread
	// returns to the payload through it after forking into an exec's
	// cgroup.
	payloadTasks *os.File
	// execs counts the running execs (session).
	execs execSlots
	// execCgroups receives the execs' cgroup files (session).
	execCgroups *execCgroups
	// files runs file operations as the sandbox user (session).
	files fileThread
	// sessionProxy is the sandbox's Kubernetes/Prometheus proxy
	// (session): its ports are the sandbox's, so one serves every exec.
	sessionProxy sessionProxy

	// mu guards waiters: the wait status channel of every runtime process
	// start forked, registered before the process can exit. The status of
	// any other child (an orphan the worker reaps as pid 1) is dropped.
	mu      sync.Mutex
	waiters map[int]chan exitStatus
}

// exitStatus is what wait4 reports for a child.
type exitStatus struct {
	ws unix.WaitStatus
	ru unix.Rusage
}

func newServer() *server {
	return &server{waiters: map[int]chan exitStatus{}}
}

// notifyChildren subscribes to SIGCHLD for reap. It must be called before
// the first child can exit: a SIGCHLD delivered before the subscription is
// lost, and the child would stay an unreaped zombie whose Exit never
// arrives.
func notifyChildren() <-chan os.Signal {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGCHLD)
	return ch
}

// reap collects every child that exits (orphans included, since the
// worker is the sandbox's init) and hands the status of a waited-for pid
// to its waiter (see waiters). ch comes from notifyChildren.
func (s *server) reap(ch <-chan os.Signal) {
	for range ch {
		for {
			var st exitStatus
			pid, err := unix.Wait4(-1, &st.ws, unix.WNOHANG, &st.ru)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			s.mu.Lock()
			if w, ok := s.waiters[pid]; ok {
				delete(s.waiters, pid)
				w <- st
			}
			s.mu.Unlock()
		}
	}
}

var rlimitResources = map[string]int{
	"NOFILE": unix.RLIMIT_NOFILE, "FSIZE": unix.RLIMIT_FSIZE, "CORE": unix.RLIMIT_CORE,
	"STACK": unix.RLIMIT_STACK, "NPROC": unix.RLIMIT_NPROC, "AS": unix.RLIMIT_AS,
	"CPU": unix.RLIMIT_CPU,
}

// checkRlimits resolves req's rlimits to setrlimit(2) resources.
func checkRlimits(req *workerv1.RunRequest) ([]int, error) {
	res := make([]int, len(req.GetRlimits()))
	for i, rl := range req.GetRlimits() {
		r, ok := rlimitResources[rl.GetResource()]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %s", rl.GetResource())
		}
		res[i] = r
	}
	return res, nil
}

// Prepare forks the runtime process of req ahead of the Run that will use
// it (a warm sandbox): placed in the payload cgroup and held until Run
// releases it with its program and stdin. A Run of another shape kills it
// and forks its own. req must take a program (goja, node).
func (s *server) Prepare(_ context.Context, req *workerv1.RunRequest) (*workerv1.PrepareResponse, error) {
	if s.session {
		return nil, errSession
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.prepared != nil {
		return nil, status.Error(codes.FailedPrecondition, "a process is already prepared")
	}
	if k := s.takeKept(req); k != nil {
		s.prepared = k
		return &workerv1.PrepareResponse{}, nil
	}
	if k := s.kept; k != nil {
		// Kept for another shape: the next Run would kill it anyway.
		s.kept = nil
		s.end(k)
	}
	keep := req.GetKeep() && len(req.GetArgv()) > 0 && req.GetArgv()[0] == rootfs.GojaPath
	p, err := s.start(req, startOpts{hold: true, stdinPipe: !keep, keep: keep, target: s.payloadTarget()})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.prepared = p
	if p.ready != nil {
		// Wait for the runtime to be ready: it closes its end (or exits).
		// The read returns at EOF; the deadline bounds a runtime that
		// never says so.
		_ = p.ready.SetReadDeadline(time.Now().Add(readyTimeout))
		_, _ = io.Copy(io.Discard, p.ready)
		p.ready.Close()
		p.ready = nil
	}
	return &workerv1.PrepareResponse{}, nil
}

// Startup returns the worker's start-up phases.
func (s *server) Startup(context.Context, *workerv1.StartupRequest) (*workerv1.StartupResponse, error) {
	return &workerv1.StartupResponse{Phases: s.startup.snapshot()}, nil
}

// SetBroker implements plugin.BrokerUser.
func (s *server) SetBroker(b *goplugin.GRPCBroker) { s.broker = b }

// Run starts the runtime process of req and streams its output.
func (s *server) Run(req *workerv1.RunRequest, stream workerv1.Worker_RunServer) error {
	if s.session {
		return errSession
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if id := req.GetProxyBrokerId(); id != 0 {
		px, err := startProxy(s.broker, id)
		if err != nil {
			return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: "start the Kubernetes/Prometheus proxy: " + err.Error()}))
		}
		defer px.close()
	}
	p := s.prepared
	s.prepared = nil
	if p == nil {
		p = s.takeKept(req)
	}
	if p != nil && !proto.Equal(p.shape, workerv1.Shape(req)) {
		// Prepared for another request: never used, never released.
		s.end(p)
		p = nil
	}
	if k := s.kept; k != nil {
		// Kept for another shape: nothing of it (its heap holds earlier
		// programs' garbage) may sit beside this run.
		s.kept = nil
		s.end(k)
	}
	if p != nil && p.ctl != nil {
		st, err, served := s.serveKept(p, req, stream)
		if served {
			if err != nil {
				return err
			}
			e := statusToExit(st)
			if s.kept == p {
				e.KeptPid = int32(p.pid)
			}
			return stream.Send(exitEvent(e))
		}
		p = nil // it could not take the program: start a process of its own
	}
	if p == nil {
		var err error
		if p, err = s.start(req, startOpts{target: s.payloadTarget()}); err != nil {
			return stream.Send(exitEvent(startFailed(err)))
		}
	}
	p.release(req.GetProgram(), req.GetStdin())
	st, err := s.collect(p, stream.Send, stream.Context().Done())
	if err != nil {
		return err
	}
	return stream.Send(exitEvent(statusToExit(st)))
}

// collect streams p's output through send until p has exited and its pipes
// are drained (or, after drainAfterExit, closed: a descendant holds them),
// and returns p's exit status. When done closes (the call went away) or a
// send fails, it kills p's process group and goes on until p has exited.
// It returns an error only when flushing the last queued events fails.
func (s *server) collect(p *process, send func(*workerv1.RunEvent) error, done <-chan struct{}) (exitStatus, error) {
	exitCh := p.exit
	if p.runExit != nil {
		exitCh = p.runExit
	}

	events := make(chan *workerv1.RunEvent, 16)
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pump(p.stdout, events, stdoutEvent, &pumps)
	go pump(p.stderr, events, stderrEvent, &pumps)
	if p.results != nil {
		pumps.Add(1)
		go pump(p.results, events, resultsEvent, &pumps)
	}
	if p.console != nil {
		pumps.Add(1)
		go pump(p.console, events, consoleEvent, &pumps)
	}
	pumpsDone := make(chan struct{})
	go func() { pumps.Wait(); close(pumpsDone) }()

	var st exitStatus
	exited, drained := false, false
	var drain <-chan time.Time
	for !exited || !drained {
		select {
		case ev := <-events:
			if err := send(ev); err != nil {
				s.killGroup(p.pid)
				p.killed = true
			}
		case st = <-exitCh:
			exited, exitCh = true, nil
			drain = time.After(drainAfterExit)
		case <-drain:
			// A descendant holds the pipes open: stop reading.
			p.closePipes()
			drain = nil
		case <-pumpsDone:
			drained, pumpsDone = true, nil
		case <-done:
			// The supervisor went away or cancelled: end the program.
			s.killGroup(p.pid)
			p.killed = true
			done = nil
		}
	}
	// Flush what the pumps queued before they stopped.
	for {
		select {
		case ev := <-events:
			if err := send(ev); err != nil {
				p.closePipes()
				return st, err
			}
			continue
		default:
		}
		break
	}
	p.closePipes()
	return st, nil
}

// startFailed is the Exit of a process that could not be started: err's
// message, its errno when a system call failed (Exit.start_errno), and
// whether it failed at the working directory (Exit.start_dir).
func startFailed(err error) *workerv1.Exit {
	e := &workerv1.Exit{ExitCode: -1, StartError: err.Error(), StartDir: errors.As(err, new(*dirError))}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.StartErrno = int32(errno)
	}
	return e
}

// dirError is a start that failed at the child's chdir to dir.
type dirError struct {
	dir string
	err error
}

func (e *dirError) Error() string { return "working directory " + e.dir + ": " + e.err.Error() }
func (e *dirError) Unwrap() error { return e.err }

// atDir tells whether a start of argv0 in dir that failed with err failed
// at the chdir rather than at the exec: the child reports either errno
// alike. ENOENT, ENOTDIR, ELOOP and EACCES may come from both; the
// program, an absolute path on the sandbox's read-only root, stays as it
// was, so if it can be executed now it could be at the start, and the
// directory (which the sandbox's own processes may remove or replace
// after the supervisor checked it) is what failed.
func atDir(dir, argv0 string, err error) bool {
	var errno syscall.Errno
	if dir == "" || !filepath.IsAbs(argv0) || !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.ELOOP, syscall.EACCES:
		return unix.Faccessat(unix.AT_FDCWD, argv0, unix.X_OK, unix.AT_EACCESS) == nil
	}
	return false
}

func exitEvent(e *workerv1.Exit) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Exit{Exit: e}}
}

func statusToExit(st exitStatus) *workerv1.Exit {
	u := &workerv1.Rusage{
		CpuUserMicros:   st.ru.Utime.Sec*1e6 + st.ru.Utime.Usec,
		CpuSystemMicros: st.ru.Stime.Sec*1e6 + st.ru.Stime.Usec,
	}
	if st.ws.Signaled() {
		return &workerv1.Exit{ExitCode: -1, Signal: int32(st.ws.Signal()), Usage: u}
	}
	return &workerv1.Exit{ExitCode: int32(st.ws.ExitStatus()), Usage: u}
}

// endWait bounds end's wait for a killed process to be reaped.
const endWait = 2 * time.Second

// end kills p (a prepared or kept process no run will use), closes the
// worker's ends and waits until it is reaped (at most endWait), so that a
// process started next does not find it in /proc.
func (s *server) end(p *process) {
	s.killGroup(p.pid)
	p.closeAll()
	select {
	case <-p.exit:
	case <-time.After(endWait):
	}
}

// killGroup SIGKILLs the process group of pid, and pid, from the forker's
// thread (see forker).
func (s *server) killGroup(pid int) {
	s.forker.do(func() {
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = unix.Kill(pid, unix.SIGKILL)
	})
}

// pump reads one pipe until EOF or close and queues its chunks, wrapped by
// wrap into events.
func pump(f *os.File, events chan<- *workerv1.RunEvent, wrap func([]byte) *workerv1.RunEvent, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		buf := make([]byte, chunkSize)
		n, err := f.Read(buf)
		if n > 0 {
			events <- wrap(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func stdoutEvent(b []byte) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Stdout{Stdout: b}}
}

func stderrEvent(b []byte) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Stderr{Stderr: b}}
}

func resultsEvent(b []byte) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Results{Results: b}}
}

func consoleEvent(b []byte) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Console{Console: b}}
}

// process is a started runtime process and the parent ends of its pipes.
type process struct {
	pid                     int
	stdout, stderr, results *os.File // read ends; results: nil unless requested
	console                 *os.File // read end of the console channel; nil unless requested
	gate                    *os.File // write end of fd 3 until release
	stdin                   *os.File // write end of a held stdin until release
	ready                   *os.File // read end of the readiness pipe (fd 5), until Prepare saw it closed
	gated                   bool     // held at gateScript rather than by its program
	shape                   *workerv1.RunRequest
	exit                    <-chan exitStatus // its wait status, once reaped
	// ctl is the worker's end of a kept process's control socket
	// (runtime/goja.ServeEnv); nil for a process that serves one run.
	ctl *os.File
	// runExit is the status of a kept process's current run: its reply,
	// or its wait status if it died first. nil: use exit.
	runExit <-chan exitStatus
	// killed: collect killed it (a cancel, a failed send).
	killed bool
}

// closePipes closes the read ends.
func (p *process) closePipes() {
	for _, f := range []*os.File{p.stdout, p.stderr, p.results, p.console} {
		if f != nil {
			f.Close()
		}
	}
}

// closeAll closes every end the worker holds (a process that never ran).
func (p *process) closeAll() {
	p.closePipes()
	for _, f := range []*os.File{p.gate, p.stdin, p.ready, p.ctl} {
		if f != nil {
			f.Close()
		}
	}
}

// gateScript holds a runtime process until the worker has placed it in
// the payload cgroup: it reads one line from fd 3, closes it and execs the
// real argv. If the worker closes fd 3 without writing (placement failed),
// read fails and the program never runs.
const gateScript = `read -r _ <&3 && exec 3<&- && exec "$@"`

// target is the cgroup a runtime process is placed in: the payload, or an
// exec's own cgroup (session sandbox).
type target struct {
	// procs are the cgroup.procs files to write the process's pid to
	// after the fork, while it is held (cgroup v2, or PlaceByGate), one
	// per hierarchy; none: it stays where it is born.
	procs []*os.File
	// join are the tasks files (cgroup v1) the forking thread writes "0"
	// to just before the fork, so that the process is born there, and
	// back, the ones it returns to right after (the payload's, and the
	// sandbox's cgroup in the cpuacct hierarchy); none: the forking thread
	// stays where it is (in the payload, bornInPayload).
	join, back []*os.File
}

// payloadTarget places a runtime process in the payload cgroup: born
// there when the forking thread sits in it (bornInPayload), else moved.
func (s *server) payloadTarget() target {
	if s.bornInPayload || s.payload == nil {
		return target{}
	}
	return target{procs: []*os.File{s.payload}}
}

// bornThere reports whether a process forked for t starts in its cgroup
// (no move needed).
func (t target) bornThere() bool { return len(t.procs) == 0 }

// startOpts say how start starts a runtime process.
type startOpts struct {
	// hold keeps the process from running until release even when it is
	// born in its cgroup (a prepared process: Prepare).
	hold bool
	// stdinPipe gives it a pipe for stdin whose write end p.stdin keeps:
	// release writes a prepared process's stdin there, an exec streams it.
	// Otherwise stdin is req.Stdin, then end of file.
	stdinPipe bool
	// target is its cgroup.
	target target
	// keep starts a kept process (RunRequest.keep): fds 0-2 on
	// /dev/null, its control socket on fd 3 (p.ctl), no results or
	// console channel (each run brings its own), fd 5 as with hold.
	keep bool
}

// start forks the runtime process of req as the sandbox user, with stdin,
// stdout and stderr wired to pipes (and fd 4 for results when asked), in
// its cgroup (o.target): born there when the forking thread is in it
// (cgroup v1: it sits in the payload, or joins an exec's cgroup for the
// fork), else moved there right after the fork, before it runs untrusted
// code: a runtime that takes a program (goja, node) waits for it on fd 3,
// any other waits at gateScript; release lets it go. A process born in
// its cgroup that takes no program runs at once, unless o.hold. req's
// rlimits are set on the worker on the forking thread just before the
// fork (rlimits are per process and inherited; the worker cannot raise
// them again, so a sandbox serves requests of one set of rlimits). The
// process's wait status is registered before it can exit (p.exit). No
// instruction of the program runs outside its cgroup.
func (s *server) start(req *workerv1.RunRequest, o startOpts) (_ *process, err error) {
	if len(req.GetArgv()) == 0 {
		return nil, errors.New("empty argv")
	}
	resources, err := checkRlimits(req)
	if err != nil {
		return nil, err
	}
	p := &process{shape: workerv1.Shape(req)}
	var childEnds []*os.File // closed once the child has them
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			p.closeAll()
		}
	}()
	env := req.GetEnv()
	var files []uintptr
	var open []*os.File
	var gate bool
	if o.keep {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		childEnds = append(childEnds, null)
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, os.NewSyscallError("socketpair", err)
		}
		p.ctl = os.NewFile(uintptr(pair[0]), "control")
		child := os.NewFile(uintptr(pair[1]), "control")
		childEnds = append(childEnds, child)
		files = []uintptr{null.Fd(), null.Fd(), null.Fd(), child.Fd()}
		env = append(slices.Clip(env), keep.Env+"=3")
	} else {
		var stdin *os.File
		if o.stdinPipe {
			if stdin, p.stdin, err = os.Pipe(); err != nil {
				return nil, err
			}
		} else if stdin, err = inputFile(req.GetStdin()); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, stdin)
		var outW, errW *os.File
		if p.stdout, outW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, outW)
		if p.stderr, errW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, errW)
		files = []uintptr{stdin.Fd(), outW.Fd(), errW.Fd()}
		open = []*os.File{stdin, outW, errW}
		// A process that takes no program and is born in its cgroup needs
		// no gate: it may run at once.
		gate = len(req.GetProgram()) > 0 || o.hold || !o.target.bornThere()
	}
	var gateR *os.File
	if gate {
		// fd 3: the program or the gate's release line.
		if gateR, p.gate, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, gateR)
		files = append(files, gateR.Fd())
	}
	if req.GetResults() && !o.keep {
		var resW *os.File
		if p.results, resW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, resW)
		open = append(open, resW)
		files = append(files, resW.Fd()) // fd 4
	}
	if o.hold && req.GetSignalsReady() {
		// fd 5: closed by the runtime once it waits for its program.
		var readyW *os.File
		if p.ready, readyW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, readyW)
		for len(files) < readyFD {
			files = append(files, ^uintptr(0)) // closed: no results channel
		}
		files = append(files, readyW.Fd())
		env = append(slices.Clip(env), readyEnv+"="+strconv.Itoa(readyFD))
	}
	if req.GetConsole() && !o.keep {
		// fd 6: the console channel (runtime/jsconsole).
		var conW *os.File
		if p.console, conW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, conW)
		open = append(open, conW)
		for len(files) < jsconsole.FD {
			files = append(files, ^uintptr(0)) // closed: no channel there
		}
		files = append(files, conW.Fd())
	}
	// The pipes belong to the worker (sandbox root), so the runtime process
	// could not reopen them through /dev/stdout, /dev/stderr (proc's fd
	// links). Opening them up is harmless: only processes that already
	// hold one of the ends reach them. The worker keeps no CAP_CHOWN, so
	// mode rather than owner.
	for _, f := range open {
		if err := openToSandbox(f); err != nil {
			return nil, err
		}
	}
	argv := req.GetArgv()
	if gate && len(req.GetProgram()) == 0 && !o.hold {
		argv = append([]string{"/bin/sh", "-c", gateScript, "execfarm-gate"}, argv...)
		p.gated = true
	}
	dir := req.GetDir()
	if dir == "" {
		dir = "/"
	}
	uid := uint32(namespace.SandboxUID)
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}},
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	var pid int
	var forkErr error // ForkExec's own: the child's chdir or exec, or the fork
	s.forker.do(func() {
		for i, rl := range req.GetRlimits() {
			if err = unix.Setrlimit(resources[i], &unix.Rlimit{Cur: rl.GetSoft(), Max: rl.GetHard()}); err != nil {
				err = fmt.Errorf("setrlimit %s: %w", rl.GetResource(), err)
				return
			}
		}
		if t := o.target; len(t.join) > 0 {
			// Back first (deferred), whatever joined: the thread must not
			// stay in an exec's cgroup.
			defer func() {
				for _, f := range t.back {
					if _, berr := f.WriteString("0"); berr != nil && err == nil {
						err = fmt.Errorf("forking thread back into the sandbox's cgroup %s: %w", f.Name(), berr)
					}
				}
			}()
			for _, f := range t.join {
				// "0" is the writing thread (tasks moves one thread).
				if _, err = f.WriteString("0"); err != nil {
					err = fmt.Errorf("forking thread into the exec's cgroup %s: %w", f.Name(), err)
					return
				}
			}
		}
		// The reaper delivers statuses under s.mu: holding it from the
		// fork to the registration, no status of this child is missed.
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.oom != nil {
			if err = s.oom.Raise(); err != nil {
				return
			}
		}
		pid, err = syscall.ForkExec(argv[0], argv, attr)
		forkErr = err
		if s.oom != nil {
			if rerr := s.oom.Restore(); rerr != nil && err == nil {
				err = rerr // the child is killed below: pid > 0
			}
		}
		if err != nil {
			return
		}
		w := make(chan exitStatus, 1)
		s.waiters[pid] = w
		p.exit = w
	})
	if pid > 0 {
		p.pid = pid
	}
	if err != nil {
		if pid > 0 {
			s.killGroup(pid) // held at its gate, or born where it must not run
		}
		if err == forkErr && atDir(req.GetDir(), argv[0], err) {
			return nil, &dirError{dir: req.GetDir(), err: err}
		}
		return nil, fmt.Errorf("start %s: %w", req.GetArgv()[0], err)
	}
	for _, f := range o.target.procs {
		if _, err := f.WriteString(strconv.Itoa(pid)); err != nil {
			s.killGroup(pid) // and the gate is closed unwritten: the program never runs
			return nil, fmt.Errorf("place %s in its cgroup: %w", req.GetArgv()[0], err)
		}
	}
	return p, nil
}

// release lets a forked process run: it gets program on fd 3 (or the
// gate's line) and, for a held stdin, stdin.
func (p *process) release(program, stdin []byte) {
	if p.stdin != nil {
		w := p.stdin
		p.stdin = nil
		go func() {
			_, _ = w.Write(stdin)
			w.Close()
		}()
	}
	if p.gated {
		program = []byte("go\n")
	}
	w := p.gate
	p.gate = nil
	if w == nil {
		return // no gate: it runs already
	}
	go func() {
		_, _ = w.Write(program)
		w.Close()
	}()
}

// openToSandbox makes a pipe readable and writable by the sandbox user;
// other files (/dev/null) are left alone.
func openToSandbox(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	if err := unix.Fchmod(int(f.Fd()), 0o666); err != nil {
		return os.NewSyscallError("fchmod pipe", err)
	}
	return nil
}

// inputFile returns a readable file yielding data: /dev/null when empty,
// else a pipe fed by a goroutine.
func inputFile(data []byte) (*os.File, error) {
	if len(data) == 0 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
		}
		return f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	go func() {
		_, _ = w.Write(data)
		w.Close()
	}()
	return r, nil
}

// resetTimeout bounds Reset's wait for the sandbox's processes to be gone.
const resetTimeout = 2 * time.Second

// Reset kills every process of the sandbox but the worker: kill(-1,
// SIGKILL) from the init of the pid namespace reaches all of them (and
// nothing outside), again until /proc lists no process but the worker, as
// a process may fork while it is being killed. The reaper collects them.
// A kept process (RunRequest.keep) that /proc lists alone beside the
// worker stays, idle since its reply: nothing is killed then. It waits
// for a running Run to end first. Errors: DEADLINE_EXCEEDED when
// processes are still there after resetTimeout.
func (s *server) Reset(ctx context.Context, _ *workerv1.ResetRequest) (*workerv1.ResetResponse, error) {
	if s.session {
		return nil, errSession
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if p := s.prepared; p != nil {
		s.prepared = nil
		p.closeAll()
	}
	if k := s.kept; k != nil {
		// A kept process alone (its run ended by its reply, and a Run
		// holds nothing else beside it) stays; beside anything else, it
		// goes with the rest.
		others, err := otherProcesses()
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if len(others) == 1 && others[0] == k.pid {
			return &workerv1.ResetResponse{}, nil
		}
		s.kept = nil
		k.closeAll()
	}
	deadline := time.Now().Add(resetTimeout)
	killed := 0
	var killErr error
	for {
		others, err := otherProcesses()
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if len(others) == 0 {
			break
		}
		killed = max(killed, len(others))
		if time.Now().After(deadline) || ctx.Err() != nil {
			var states []string
			for _, pid := range others {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				states = append(states, strings.TrimSpace(string(st)))
			}
			return nil, status.Errorf(codes.DeadlineExceeded, "reset: processes still alive: %q (kill: %v)", states, killErr)
		}
		killErr = s.forker.kill(-1, unix.SIGKILL)
		time.Sleep(time.Millisecond) // let the kernel finish them and the reaper collect them
	}
	return &workerv1.ResetResponse{Killed: int32(killed)}, nil
}

// otherProcesses lists the sandbox's processes other than the worker (pid
// 1), zombies included, from the sandbox's own /proc.
func otherProcesses() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != 1 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// takeKept returns the idle kept process if it has req's shape, and
// forgets it; nil otherwise (a kept process of another shape stays until
// a Run or Reset ends it).
func (s *server) takeKept(req *workerv1.RunRequest) *process {
	k := s.kept
	if k == nil || !proto.Equal(k.shape, workerv1.Shape(req)) {
		return nil
	}
	s.kept = nil
	return k
}

// serveKept runs req's program in the kept process p (package
// runtime/keep): fresh pipes for its output, the program on a pipe of its
// own, and the reply as its exit status. served is false when p could
// not take the request (it died idle): p is then killed and closed, and
// the caller starts a process of its own. After a run that ended by its
// reply p is kept again (s.kept); a process that died or was killed is
// not. err is collect's.
func (s *server) serveKept(p *process, req *workerv1.RunRequest, stream workerv1.Worker_RunServer) (st exitStatus, err error, served bool) {
	var childEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
	}()
	fail := func() (exitStatus, error, bool) {
		p.closePipes()
		p.stdout, p.stderr, p.results, p.console = nil, nil, nil, nil
		s.end(p)
		return exitStatus{}, nil, false
	}
	progR, progW, err := os.Pipe()
	if err != nil {
		return fail()
	}
	childEnds = append(childEnds, progR)
	pipe := func(read **os.File) *os.File {
		r, w, perr := os.Pipe()
		if perr != nil {
			err = perr
			return nil
		}
		*read = r
		childEnds = append(childEnds, w)
		if perr := openToSandbox(w); perr != nil {
			err = perr
		}
		return w
	}
	send := []*os.File{progR, pipe(&p.stdout), pipe(&p.stderr)}
	if req.GetResults() {
		send = append(send, pipe(&p.results))
	}
	if req.GetConsole() {
		send = append(send, pipe(&p.console))
	}
	if err != nil {
		progW.Close()
		return fail()
	}
	fds := make([]int, len(send))
	for i, f := range send {
		fds[i] = int(f.Fd())
	}
	if err := unix.Sendmsg(int(p.ctl.Fd()), make([]byte, keep.RequestBytes), unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL); err != nil {
		progW.Close()
		return fail()
	}
	for _, f := range childEnds {
		f.Close()
	}
	childEnds = nil
	go func(program []byte) {
		_, _ = progW.Write(program)
		progW.Close()
	}(req.GetProgram())
	runExit := make(chan exitStatus, 1)
	alive := make(chan bool, 1)
	go func() {
		buf := make([]byte, keep.ReplyBytes+1)
		n, rerr := unix.Read(int(p.ctl.Fd()), buf)
		if r, derr := keep.DecodeReply(buf[:max(n, 0)]); rerr == nil && derr == nil {
			alive <- true
			runExit <- exitStatus{
				ws: unix.WaitStatus(uint32(r.ExitCode&0xff) << 8),
				ru: unix.Rusage{Utime: unix.NsecToTimeval(r.UserMicros * 1000), Stime: unix.NsecToTimeval(r.SystemMicros * 1000)},
			}
			return
		}
		// No reply: the process died (or broke the protocol, and is
		// killed). Its wait status is the run's.
		alive <- false
		s.killGroup(p.pid)
		runExit <- <-p.exit
	}()
	p.runExit = runExit
	st, err = s.collect(p, stream.Send, stream.Context().Done())
	p.runExit = nil
	p.stdout, p.stderr, p.results, p.console = nil, nil, nil, nil
	if <-alive && err == nil && !p.killed {
		s.kept = p
	} else {
		s.killGroup(p.pid)
		p.closeAll()
	}
	return st, err, true
}
