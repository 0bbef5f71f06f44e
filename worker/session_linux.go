package worker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// A session sandbox runs many execs, several at once, each a runtime
// process in its own process group and, when the supervisor gives it one,
// its own cgroup below the payload:
//
//	supervisor                                   worker
//	  mkdir payload/<exec>, open its tasks (v1)
//	  or cgroup.procs (v2); on v1 with cpuacct
//	  apart, mkdir <exec> there too and open its
//	  file and the sandbox's tasks (the way back)
//	  sendmsg(token, fds) ── descriptor channel ──▶ execCgroups: token → files
//	  Exec: ExecStart{request, token} ──────────▶ slot (≤ MaxConcurrentExecs)
//	                                               fork as uid 1000, new process
//	                                               group, into the exec's cgroups
//	  ◀── ExecStarted{pid}
//	  ExecInput{stdin | close_stdin | signal}* ──▶ stdin pipe / kill(-pgid, sig)
//	  ◀── RunEvent{stdout|stderr|results}*, Exit{usage}
//	  kill the exec's cgroup (timeout, cancel), rmdir it once empty

// execStartTimeout bounds how long an Exec waits for its cgroup's file on
// the descriptor channel (the supervisor sends it before the call).
const execStartTimeout = 5 * time.Second

// maxStdinChunk is the largest ExecInput.stdin accepted, and stdinQueue how
// many chunks wait for a process that does not read: the queue lets
// signals and close_stdin behind up to 1 MiB of unread stdin through;
// beyond it, gRPC flow control holds the supervisor.
const (
	maxStdinChunk = 64 << 10
	stdinQueue    = 16
)

// errNotSession and errSession refuse calls of the other kind of sandbox.
var (
	errNotSession = status.Error(codes.FailedPrecondition, "not a session sandbox")
	errSession    = status.Error(codes.FailedPrecondition, "a session sandbox serves Exec, not Run, Prepare or Reset")
)

// execSlots counts the running execs of a session sandbox.
type execSlots struct {
	mu sync.Mutex
	n  int
}

// acquire takes a slot; false when plugin.MaxConcurrentExecs run.
func (e *execSlots) acquire() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n >= plugin.MaxConcurrentExecs {
		return false
	}
	e.n++
	return true
}

func (e *execSlots) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n--
}

// execCgroups receives the execs' cgroup files on the descriptor channel
// (plugin.SandboxConfig.ExecCgroupFD), one to maxExecFiles per exec, and
// hands them to the Exec that names its token. It keeps the files of at
// most maxPending execs nobody took (an Exec call that never came): the
// oldest are closed first.
type execCgroups struct {
	conn *net.UnixConn

	mu      sync.Mutex
	pending map[uint64][]*os.File
	order   []uint64 // tokens in pending, oldest first
	arrived chan struct{}
	closed  bool
}

const maxPending = 2 * plugin.MaxConcurrentExecs

// maxExecFiles is the most files one exec's message carries
// (plugin.SandboxConfig.ExecCgroupFD).
const maxExecFiles = 3

func newExecCgroups(f *os.File) (*execCgroups, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("exec cgroup channel: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("exec cgroup channel: not a unix socket")
	}
	e := &execCgroups{conn: uc, pending: map[uint64][]*os.File{}, arrived: make(chan struct{})}
	go e.receive()
	return e, nil
}

// receive reads the channel until the supervisor closes it.
func (e *execCgroups) receive() {
	defer func() {
		e.mu.Lock()
		e.closed = true
		close(e.arrived)
		e.mu.Unlock()
	}()
	buf := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(4*maxExecFiles))
	for {
		n, oobn, _, _, err := e.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		var fds []int
		if err == nil && len(msgs) == 1 {
			fds, _ = unix.ParseUnixRights(&msgs[0])
		}
		if n != 8 || len(fds) < 1 || len(fds) > maxExecFiles {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		files := make([]*os.File, len(fds))
		for i, fd := range fds {
			unix.CloseOnExec(fd)
			files[i] = os.NewFile(uintptr(fd), "exec cgroup")
		}
		e.put(binary.LittleEndian.Uint64(buf), files)
	}
}

func (e *execCgroups) put(token uint64, files []*os.File) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.pending[token]; old != nil {
		closeFiles(old)
	} else {
		e.order = append(e.order, token)
	}
	e.pending[token] = files
	for len(e.order) > maxPending {
		oldest := e.order[0]
		e.order = e.order[1:]
		closeFiles(e.pending[oldest])
		delete(e.pending, oldest)
	}
	close(e.arrived)
	e.arrived = make(chan struct{})
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// take returns the files sent under token, waiting for them up to
// execStartTimeout or ctx's end.
func (e *execCgroups) take(ctx context.Context, token uint64) ([]*os.File, error) {
	deadline := time.NewTimer(execStartTimeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		if f, ok := e.pending[token]; ok {
			delete(e.pending, token)
			for i, t := range e.order {
				if t == token {
					e.order = append(e.order[:i], e.order[i+1:]...)
					break
				}
			}
			e.mu.Unlock()
			return f, nil
		}
		closed, arrived := e.closed, e.arrived
		e.mu.Unlock()
		if closed {
			return nil, status.Error(codes.FailedPrecondition, "the descriptor channel is closed")
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return nil, status.Errorf(codes.DeadlineExceeded, "no cgroup arrived for exec token %d within %s", token, execStartTimeout)
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// execTarget is where an exec's files place its process: with
// bornInPayload (v1) the forking thread joins the exec's cgroup (files[0])
// and, with cpuacct apart, its cpuacct cgroup (files[1]) for the fork,
// and comes back to the payload and the sandbox's cpuacct cgroup
// (files[2]); otherwise the held process is moved into each.
func execTarget(files []*os.File, bornInPayload bool, payloadTasks *os.File) (target, error) {
	if !bornInPayload {
		return target{procs: files}, nil
	}
	switch len(files) {
	case 1:
		return target{join: files, back: []*os.File{payloadTasks}}, nil
	case 3:
		return target{join: files[:2], back: []*os.File{payloadTasks, files[2]}}, nil
	}
	return target{}, status.Errorf(codes.InvalidArgument, "an exec's cgroup message holds %d files, not 1 or 3", len(files))
}

// Exec runs one runtime process of a session sandbox (see the proto and
// the drawing above).
func (s *server) Exec(stream workerv1.Worker_ExecServer) error {
	if !s.session {
		return errNotSession
	}
	in, err := stream.Recv()
	if err != nil {
		return err
	}
	start := in.GetStart()
	req := start.GetRequest()
	switch {
	case req == nil:
		return status.Error(codes.InvalidArgument, "the first message of an Exec must be its start, with a request")
	}
	if id := req.GetProxyBrokerId(); id != 0 {
		if err := s.sessionProxy.start(s.broker, id); err != nil {
			return err
		}
	}
	if !s.execs.acquire() {
		return status.Errorf(codes.ResourceExhausted, "%d execs are running, the most a sandbox runs at once", plugin.MaxConcurrentExecs)
	}
	defer s.execs.release()
	t := s.payloadTarget()
	if tok := start.GetCgroupToken(); tok != 0 {
		if s.execCgroups == nil {
			return status.Error(codes.FailedPrecondition, "the sandbox has no descriptor channel for exec cgroups")
		}
		files, err := s.execCgroups.take(stream.Context(), tok)
		if err != nil {
			return err
		}
		defer closeFiles(files)
		if t, err = execTarget(files, s.bornInPayload, s.payloadTasks); err != nil {
			return err
		}
	}
	p, err := s.start(req, startOpts{stdinPipe: true, target: t})
	if err != nil {
		return stream.Send(exitEvent(startFailed(err)))
	}
	stdin := p.stdin
	p.stdin = nil
	defer stdin.Close() // ends a feeder blocked on a process that stopped reading
	if err := stream.Send(&workerv1.RunEvent{Event: &workerv1.RunEvent_Started{Started: &workerv1.ExecStarted{Pid: int32(p.pid)}}}); err != nil {
		s.killGroup(p.pid)
		<-p.exit
		p.closeAll()
		return err
	}
	chunks := make(chan []byte, stdinQueue)
	if len(req.GetStdin()) > 0 {
		chunks <- req.GetStdin()
	}
	if !start.GetStdinOpen() {
		close(chunks)
	}
	go feed(stdin, chunks)
	inputDone := make(chan struct{})
	go func() {
		defer close(inputDone)
		s.execInput(stream, p.pid, chunks, start.GetStdinOpen())
	}()
	p.release(req.GetProgram(), nil)
	st, err := s.collect(p, stream.Send, stream.Context().Done())
	if err != nil {
		return err
	}
	return stream.Send(exitEvent(statusToExit(st)))
}

// execInput reads the rest of an Exec call: stdin into chunks (closed at
// close_stdin or the call's end, unless already closed: open false),
// signals to the exec's process group (led by pid).
func (s *server) execInput(stream workerv1.Worker_ExecServer, pid int, chunks chan<- []byte, open bool) {
	closeStdin := func() {
		if open {
			close(chunks)
			open = false
		}
	}
	defer closeStdin()
	for {
		in, err := stream.Recv()
		if err != nil {
			return
		}
		switch x := in.GetInput().(type) {
		case *workerv1.ExecInput_Stdin:
			if !open || len(x.Stdin) > maxStdinChunk {
				continue // after close_stdin, or oversized: dropped
			}
			select {
			case chunks <- x.Stdin:
			case <-stream.Context().Done():
				return
			}
		case *workerv1.ExecInput_CloseStdin:
			closeStdin()
		case *workerv1.ExecInput_Signal:
			if sig := syscall.Signal(x.Signal); sig >= 1 && sig <= 31 {
				// The group may be gone: ESRCH is no error here.
				_ = s.forker.kill(-pid, sig)
			}
		}
	}
}

// feed writes chunks to w, the write end of a process's stdin, and closes
// it at the end of chunks or at the first failed write (the process
// exited or closed its stdin; the worker ignores SIGPIPE for it: Go
// returns EPIPE on descriptors other than 1 and 2).
func feed(w *os.File, chunks <-chan []byte) {
	defer w.Close()
	for b := range chunks {
		if _, err := w.Write(b); err != nil {
			for range chunks {
			}
			return
		}
	}
}
