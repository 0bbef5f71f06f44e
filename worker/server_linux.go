package worker

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// drainAfterExit bounds how long Run keeps reading output after the
// runtime process exited while a descendant still holds its pipes open.
// The supervisor kills the whole sandbox right after Run returns.
const drainAfterExit = 200 * time.Millisecond

// chunkSize is the largest output chunk read from a pipe in one go.
const chunkSize = 32 << 10

// server implements workerv1.WorkerServer. It runs one runtime process at
// a time and, as pid 1 of the sandbox, reaps every child.
type server struct {
	workerv1.UnimplementedWorkerServer

	runMu sync.Mutex // one Run at a time

	// payload is the payload cgroup's cgroup.procs (nil: none); every
	// runtime process is moved there before it runs.
	payload *os.File
	// forker forks every runtime process.
	forker forker
	// broker reaches services the supervisor serves (the HostProxy).
	broker *goplugin.GRPCBroker

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
	if len(req.GetArgv()) == 0 {
		return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: "empty argv"}))
	}
	// rlimits are per process and inherited: set them on the worker just
	// before the fork. A sandbox serves one execution, so lowering the
	// worker's own limits costs nothing later.
	for _, rl := range req.GetRlimits() {
		res, ok := rlimitResources[rl.GetResource()]
		if !ok {
			return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: "unknown rlimit " + rl.GetResource()}))
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: rl.GetSoft(), Max: rl.GetHard()}); err != nil {
			return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: fmt.Sprintf("setrlimit %s: %v", rl.GetResource(), err)}))
		}
	}
	p, err := s.start(req)
	if err != nil {
		return stream.Send(exitEvent(&workerv1.Exit{ExitCode: -1, StartError: err.Error()}))
	}
	exitCh := s.wait(p.pid)

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
				killGroup(p.pid)
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
			killGroup(p.pid)
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

func killGroup(pid int) {
	_ = unix.Kill(-pid, unix.SIGKILL)
	_ = unix.Kill(pid, unix.SIGKILL)
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
	stdout, stderr, results *os.File // results: nil unless requested
}

func (p *process) closePipes() {
	p.stdout.Close()
	p.stderr.Close()
	if p.results != nil {
		p.results.Close()
	}
}

// gateScript holds a runtime process until the worker has placed it in
// the payload cgroup: it reads one line from fd 3, closes it and execs the
// real argv. If the worker closes fd 3 without writing (placement failed),
// read fails and the program never runs.
const gateScript = `read -r _ <&3 && exec 3<&- && exec "$@"`

// start forks the runtime process as the sandbox user with stdin, stdout
// and stderr wired to pipes, places it in the payload cgroup, and only then
// releases it: a program with a RunRequest.program waits for the program
// on fd 3; any other waits at gateScript. No instruction of the program
// runs outside the payload cgroup.
func (s *server) start(req *workerv1.RunRequest) (*process, error) {
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	stdin, err := inputFile(req.GetStdin())
	if err != nil {
		return nil, err
	}
	closeAfter = append(closeAfter, stdin)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	closeAfter = append(closeAfter, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		return nil, err
	}
	closeAfter = append(closeAfter, errW)
	// The pipes belong to the worker (sandbox root), so the runtime process
	// could not reopen them through /dev/stdout, /dev/stderr (proc's fd
	// links). Opening them up is harmless: only processes that already
	// hold one of the ends reach them. The worker keeps no CAP_CHOWN, so
	// mode rather than owner.
	for _, f := range []*os.File{stdin, outW, errW} {
		if err := openToSandbox(f); err != nil {
			outR.Close()
			errR.Close()
			return nil, err
		}
	}
	// fd 3: the program (goja) or the gate's release line.
	gateR, gateW, err := os.Pipe()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	closeAfter = append(closeAfter, gateR)
	files := []uintptr{stdin.Fd(), outW.Fd(), errW.Fd(), gateR.Fd()}
	var resR *os.File
	if req.GetResults() {
		var resW *os.File
		if resR, resW, err = os.Pipe(); err != nil {
			gateW.Close()
			outR.Close()
			errR.Close()
			return nil, err
		}
		closeAfter = append(closeAfter, resW)
		if err := openToSandbox(resW); err != nil {
			gateW.Close()
			outR.Close()
			errR.Close()
			resR.Close()
			return nil, err
		}
		files = append(files, resW.Fd()) // fd 4
	}
	argv := req.GetArgv()
	release := []byte(req.GetProgram())
	if len(release) == 0 {
		argv = append([]string{"/bin/sh", "-c", gateScript, "execfarm-gate"}, argv...)
		release = []byte("go\n")
	}
	dir := req.GetDir()
	if dir == "" {
		dir = "/"
	}
	uid := uint32(namespace.SandboxUID)
	pid, err := s.forker.forkExec(argv[0], argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   req.GetEnv(),
		Files: files,
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}},
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
		},
	})
	p := &process{pid: pid, stdout: outR, stderr: errR, results: resR}
	if err != nil {
		gateW.Close()
		p.closePipes()
		return nil, fmt.Errorf("start %s: %w", req.GetArgv()[0], err)
	}
	if s.payload != nil {
		if _, err := s.payload.WriteString(strconv.Itoa(pid)); err != nil {
			gateW.Close() // the gate's read fails: the program never runs
			killGroup(pid)
			p.closePipes()
			return nil, fmt.Errorf("place %s in the payload cgroup: %w", req.GetArgv()[0], err)
		}
	}
	go func() {
		_, _ = gateW.Write(release)
		gateW.Close()
	}()
	return p, nil
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
