package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/proto/workerv1"
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

// server implements workerv1.WorkerServer. It runs one runtime process at
// a time and, as pid 1 of the sandbox, reaps every child.
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
	// broker reaches services the supervisor serves (the HostProxy).
	broker *goplugin.GRPCBroker
	// prepared is the process Prepare forked, until a Run takes it.
	prepared *process
	// startup times the worker's start-up (Startup).
	startup phases

	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	exited  map[int]unix.WaitStatus // reaped before anyone waited
}

func newServer() *server {
	return &server{waiters: map[int]chan unix.WaitStatus{}, exited: map[int]unix.WaitStatus{}}
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
// to its waiter. ch comes from notifyChildren.
func (s *server) reap(ch <-chan os.Signal) {
	for range ch {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			s.mu.Lock()
			if w, ok := s.waiters[pid]; ok {
				delete(s.waiters, pid)
				w <- ws
			} else {
				s.exited[pid] = ws
			}
			s.mu.Unlock()
		}
	}
}

// wait returns a channel that yields pid's wait status.
func (s *server) wait(pid int) <-chan unix.WaitStatus {
	w := make(chan unix.WaitStatus, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ws, ok := s.exited[pid]; ok {
		delete(s.exited, pid)
		w <- ws
		return w
	}
	s.waiters[pid] = w
	return w
}

var rlimitResources = map[string]int{
	"NOFILE": unix.RLIMIT_NOFILE, "FSIZE": unix.RLIMIT_FSIZE, "CORE": unix.RLIMIT_CORE,
	"STACK": unix.RLIMIT_STACK, "NPROC": unix.RLIMIT_NPROC, "AS": unix.RLIMIT_AS,
	"CPU": unix.RLIMIT_CPU,
}

// forkWithLimits applies req's rlimits to the worker and forks. rlimits
// are per process and inherited: set them on the worker just before the
// fork. A sandbox serves one execution, so lowering the worker's own
// limits costs nothing later.
func (s *server) forkWithLimits(req *workerv1.RunRequest, holdStdin bool) (*process, error) {
	if len(req.GetArgv()) == 0 {
		return nil, errors.New("empty argv")
	}
	for _, rl := range req.GetRlimits() {
		res, ok := rlimitResources[rl.GetResource()]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %s", rl.GetResource())
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: rl.GetSoft(), Max: rl.GetHard()}); err != nil {
			return nil, fmt.Errorf("setrlimit %s: %w", rl.GetResource(), err)
		}
	}
	return s.fork(req, holdStdin)
}

// Prepare forks the runtime process of req ahead of the Run that will use
// it (a warm sandbox): placed in the payload cgroup and held until Run
// releases it with its program and stdin. A Run of another shape kills it
// and forks its own. req must take a program (goja, node).
func (s *server) Prepare(_ context.Context, req *workerv1.RunRequest) (*workerv1.PrepareResponse, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.prepared != nil {
		return nil, status.Error(codes.FailedPrecondition, "a process is already prepared")
	}
	p, err := s.forkWithLimits(req, true)
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
	if p != nil && !proto.Equal(p.shape, shapeOf(req)) {
		// Prepared for another request: never used, never released.
		s.killGroup(p.pid)
		p.closeAll()
		p = nil
	}
	if p == nil {
		var err error
		if p, err = s.forkWithLimits(req, false); err != nil {
			return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: err.Error()}))
		}
	}
	exitCh := s.wait(p.pid)
	p.release(req.GetProgram(), req.GetStdin())

	events := make(chan *workerv1.RunEvent, 16)
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pump(p.stdout, events, stdoutEvent, &pumps)
	go pump(p.stderr, events, stderrEvent, &pumps)
	if p.results != nil {
		pumps.Add(1)
		go pump(p.results, events, resultsEvent, &pumps)
	}
	pumpsDone := make(chan struct{})
	go func() { pumps.Wait(); close(pumpsDone) }()

	done := stream.Context().Done()
	var ws unix.WaitStatus
	exited, drained := false, false
	var drain <-chan time.Time
	for !exited || !drained {
		select {
		case ev := <-events:
			if err := stream.Send(ev); err != nil {
				s.killGroup(p.pid)
			}
		case ws = <-exitCh:
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
			done = nil
		}
	}
	// Flush what the pumps queued before they stopped.
	for {
		select {
		case ev := <-events:
			if err := stream.Send(ev); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	p.closePipes()
	return stream.Send(exitEvent(statusToExit(ws)))
}

func exitEvent(e *workerv1.Exit) *workerv1.RunEvent {
	return &workerv1.RunEvent{Event: &workerv1.RunEvent_Exit{Exit: e}}
}

func statusToExit(ws unix.WaitStatus) *workerv1.Exit {
	if ws.Signaled() {
		return &workerv1.Exit{ExitCode: -1, Signal: int32(ws.Signal())}
	}
	return &workerv1.Exit{ExitCode: int32(ws.ExitStatus())}
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

// process is a started runtime process and the parent ends of its pipes.
type process struct {
	pid                     int
	stdout, stderr, results *os.File // read ends; results: nil unless requested
	gate                    *os.File // write end of fd 3 until release
	stdin                   *os.File // write end of a held stdin until release
	ready                   *os.File // read end of the readiness pipe (fd 5), until Prepare saw it closed
	gated                   bool     // held at gateScript rather than by its program
	shape                   *workerv1.RunRequest
}

// closePipes closes the read ends.
func (p *process) closePipes() {
	for _, f := range []*os.File{p.stdout, p.stderr, p.results} {
		if f != nil {
			f.Close()
		}
	}
}

// closeAll closes every end the worker holds (a process that never ran).
func (p *process) closeAll() {
	p.closePipes()
	for _, f := range []*os.File{p.gate, p.stdin, p.ready} {
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

// fork forks the runtime process of req as the sandbox user, with stdin,
// stdout and stderr wired to pipes (and fd 4 for results when asked), in
// the payload cgroup: born there when the forking thread is in it (cgroup
// v1, bornInPayload), else moved there right after the fork, before it
// runs untrusted code: a runtime that takes a program (goja, node) waits
// for it on fd 3, any other waits at gateScript; release lets it go. A
// process born in the payload that takes no program runs at once. With
// holdStdin, stdin is a pipe whose content release supplies (a prepared
// process, see Prepare); otherwise it is req.Stdin. No instruction of the
// program runs outside the payload cgroup.
func (s *server) fork(req *workerv1.RunRequest, holdStdin bool) (_ *process, err error) {
	p := &process{shape: shapeOf(req)}
	var childEnds []*os.File // closed once the child has them
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
		if err != nil {
			p.closeAll()
		}
	}()
	var stdin *os.File
	if holdStdin {
		if stdin, p.stdin, err = os.Pipe(); err != nil {
			return nil, err
		}
	} else if stdin, err = inputFile(req.GetStdin()); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, stdin)
	var outW, errW, gateR *os.File
	if p.stdout, outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, outW)
	if p.stderr, errW, err = os.Pipe(); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, errW)
	files := []uintptr{stdin.Fd(), outW.Fd(), errW.Fd()}
	open := []*os.File{stdin, outW, errW}
	// A process that takes no program and is born in the payload cgroup
	// needs no gate: it may run at once.
	gate := len(req.GetProgram()) > 0 || holdStdin || !s.bornInPayload
	if gate {
		// fd 3: the program or the gate's release line.
		if gateR, p.gate, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, gateR)
		files = append(files, gateR.Fd())
	}
	if req.GetResults() {
		var resW *os.File
		if p.results, resW, err = os.Pipe(); err != nil {
			return nil, err
		}
		childEnds = append(childEnds, resW)
		open = append(open, resW)
		files = append(files, resW.Fd()) // fd 4
	}
	env := req.GetEnv()
	if holdStdin && req.GetSignalsReady() {
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
	if gate && len(req.GetProgram()) == 0 && !holdStdin {
		argv = append([]string{"/bin/sh", "-c", gateScript, "execfarm-gate"}, argv...)
		p.gated = true
	}
	dir := req.GetDir()
	if dir == "" {
		dir = "/"
	}
	uid := uint32(namespace.SandboxUID)
	pid, err := s.forker.forkExec(argv[0], argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}},
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.GetArgv()[0], err)
	}
	p.pid = pid
	if s.payload != nil && !s.bornInPayload {
		if _, err := s.payload.WriteString(strconv.Itoa(pid)); err != nil {
			s.killGroup(pid) // and the gate is closed unwritten: the program never runs
			return nil, fmt.Errorf("place %s in the payload cgroup: %w", req.GetArgv()[0], err)
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

// shapeOf is req without what release supplies (program, stdin) and what
// does not reach the process (the proxy): two requests of one shape start
// the same process.
func shapeOf(req *workerv1.RunRequest) *workerv1.RunRequest {
	shape := proto.Clone(req).(*workerv1.RunRequest)
	shape.Program, shape.Stdin, shape.ProxyBrokerId = nil, nil, 0
	return shape
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
// It waits for a running Run to end first. Errors: DEADLINE_EXCEEDED when
// processes are still there after resetTimeout.
func (s *server) Reset(ctx context.Context, _ *workerv1.ResetRequest) (*workerv1.ResetResponse, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if p := s.prepared; p != nil {
		s.prepared = nil
		p.closeAll()
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
	s.mu.Lock()
	clear(s.exited)
	s.mu.Unlock()
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
