//go:build linux

package forkserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by Spawn once the fork server has gone (its socket
// closed or broken); its processes have been killed by their Pdeathsig.
var ErrClosed = errors.New("forkserver: fork server is gone")

// Spawn is one process to start: what syscall.ForkExec takes, limited to
// what a sandbox worker uses.
type Spawn struct {
	// Exe is the executable (the worker's sealed copy); the child runs it
	// as /proc/self/fd/N, so the host path is never executed.
	Exe  *os.File
	Argv []string
	Env  []string
	Dir  string
	// Files become the child's descriptors 0..len-1 (at most 16); none
	// may be nil.
	Files []*os.File
	// Sys: Cloneflags, UidMappings, GidMappings,
	// GidMappingsEnableSetgroups, Credential, Pdeathsig, Setsid and
	// UseCgroupFD/CgroupFD (a descriptor of the caller) are honoured; a
	// Spawn setting any other field is refused.
	Sys *syscall.SysProcAttr
}

// Client talks to one fork server. Its methods are safe for concurrent
// use.
type Client struct {
	conn    *os.File
	rc      syscall.RawConn
	onClose func()

	send sync.Mutex // one datagram at a time

	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan spawned // spawn requests by ID
	procs   map[int]*Process
	exited  map[int]uint32        // exits seen before Spawn returned the Process
	orphans map[int]bool          // children whose Spawn gave up waiting
	reaping map[int]chan struct{} // released children, closed once reaped
	err     error                 // set once the server is gone
	done    chan struct{}
	pid     int // the fork server's pid when Start started it, else 0
}

// Check reports whether the fork server can serve: an error wrapping
// ErrClosed once it has gone, or saying it is stopped (SIGSTOP, a
// debugger: state T or t in /proc/PID/stat) or a zombie. A stopped fork
// server takes requests and answers none, so sandboxes would never start.
// Without a pid (NewClient) only the first is checked.
func (c *Client) Check() error {
	select {
	case <-c.done:
		return c.gone()
	default:
	}
	if c.pid == 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.pid))
	if err != nil {
		return fmt.Errorf("forkserver: read its state: %w", err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		switch b[i+2] {
		case 'T', 't':
			return fmt.Errorf("forkserver: the fork server (pid %d) is stopped", c.pid)
		case 'Z', 'X':
			return fmt.Errorf("forkserver: the fork server (pid %d) has exited", c.pid)
		}
	}
	return nil
}

// NewClient speaks to the fork server at the other end of conn (a
// non-blocking SOCK_SEQPACKET unix socket, which it owns), after checking that it speaks this
// protocol version. It reads the socket from a goroutine of its own,
// (*Client).read, until the server goes; onClose (may be nil) is then
// called once, from that goroutine.
func NewClient(conn *os.File, onClose func()) (*Client, error) {
	c := &Client{
		conn: conn, onClose: onClose,
		waiting: map[uint64]chan spawned{},
		procs:   map[int]*Process{}, exited: map[int]uint32{}, orphans: map[int]bool{},
		reaping: map[int]chan struct{}{},
		done:    make(chan struct{}),
	}
	var err error
	if c.rc, err = conn.SyscallConn(); err != nil {
		return nil, fmt.Errorf("forkserver: %w", err)
	}
	hello, fds, err := recvMsg(c.rc, make([]byte, 4096), nil)
	closeAll(fds)
	if err != nil {
		return nil, fmt.Errorf("forkserver: no hello from the fork server: %w", err)
	}
	if hello.Op != "hello" || hello.Version != version {
		return nil, fmt.Errorf("forkserver: fork server speaks %s version %d, want version %d (worker binary from another release?)", hello.Op, hello.Version, version)
	}
	go c.read()
	return c, nil
}

// Done is closed once the fork server has gone.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the socket: the fork server exits and its remaining
// children get their Pdeathsig.
func (c *Client) Close() error { return c.conn.Close() }

// FD returns the descriptor of the socket to the fork server, -1 once it
// is closed. It is the client's: for leak checks, never to be closed or
// read by the caller.
func (c *Client) FD() int {
	fd := -1
	_ = c.rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// Spawn starts s in the fork server and returns the running process.
// Errors: ErrClosed (wrapped) when the server is gone; ctx's error if it
// ends first (a child forked after that is killed and reaped); a
// *SpawnError for the server's fork/exec error, which keeps its errno
// (errors.Is(err, syscall.ENOENT)); a refused Spawn field.
func (c *Client) Spawn(ctx context.Context, s Spawn) (*Process, error) {
	attr, extra, err := encodeSys(s.Sys)
	if err != nil {
		return nil, err
	}
	fds := []int{int(s.Exe.Fd())}
	for _, f := range s.Files {
		if f == nil {
			return nil, errors.New("forkserver: nil file in Spawn.Files")
		}
		fds = append(fds, int(f.Fd()))
	}
	fds = append(fds, extra...)
	if len(fds) > maxFDs {
		return nil, fmt.Errorf("forkserver: %d descriptors, at most %d", len(fds), maxFDs)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("forkserver: spawn %s: %w", s.Argv[0], err)
	}
	answer := make(chan spawned, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextID++
	id := c.nextID
	c.waiting[id] = answer
	c.mu.Unlock()
	c.send.Lock()
	err = c.write(message{Op: "spawn", ID: id, Argv: s.Argv, Env: s.Env, Dir: s.Dir, Files: len(s.Files), Sys: attr}, fds...)
	c.send.Unlock()
	if err != nil {
		c.abandon(id, answer)
		return nil, err
	}
	var a spawned
	select {
	case a = <-answer:
	case <-c.done:
		c.abandon(id, answer) // an answer may have come just before
		return nil, c.gone()
	case <-ctx.Done():
		c.abandon(id, answer)
		return nil, fmt.Errorf("forkserver: spawn %s: %w", s.Argv[0], ctx.Err())
	}
	if a.Err != "" {
		return nil, &SpawnError{Msg: a.Err, Errno: a.Errno}
	}
	p := &Process{Pid: a.Pid, c: c, pidfd: a.pidfd, done: make(chan struct{})}
	c.mu.Lock()
	if st, ok := c.exited[p.Pid]; ok {
		delete(c.exited, p.Pid)
		p.exit(st, nil)
	} else if c.err != nil {
		p.exit(uint32(syscall.SIGKILL), c.err)
	} else {
		c.procs[p.Pid] = p
	}
	c.mu.Unlock()
	return p, nil
}

func (c *Client) write(m message, fds ...int) error {
	err := sendMsg(c.rc, m, fds...)
	if err == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return c.err
	case errors.Is(err, unix.EPIPE), errors.Is(err, unix.ECONNRESET), errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return fmt.Errorf("forkserver: send %s: %w", m.Op, err)
}

// abandon withdraws spawn request id; a child forked for it anyway is
// killed and released (see orphan).
func (c *Client) abandon(id uint64, answer chan spawned) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
	select {
	case a := <-answer:
		c.orphan(a)
	default:
	}
}

// orphan kills and releases a child nobody waits for.
func (c *Client) orphan(a spawned) {
	if a.Err != "" || a.pidfd < 0 {
		return
	}
	_ = unix.PidfdSendSignal(a.pidfd, unix.SIGKILL, nil, 0)
	unix.Close(a.pidfd)
	c.mu.Lock()
	if _, ok := c.exited[a.Pid]; ok {
		delete(c.exited, a.Pid)
	} else {
		c.orphans[a.Pid] = true
	}
	c.mu.Unlock()
	c.send.Lock()
	_ = c.write(message{Op: "release", Pid: a.Pid})
	c.send.Unlock()
}

func (c *Client) gone() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// read dispatches the server's answers until the socket breaks, then ends
// every process still running (their Pdeathsig has killed them).
func (c *Client) read() {
	var err error
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		var m message
		var fds []int
		if m, fds, err = recvMsg(c.rc, buf, oob); err != nil {
			break
		}
		switch m.Op {
		case "spawned":
			pidfd := -1
			if len(fds) == 1 {
				pidfd = fds[0]
			} else {
				closeAll(fds)
			}
			a := spawned{m, pidfd}
			// Handed over under the lock (the channel has room): a Spawn
			// that gives up meanwhile finds either its request still
			// waiting or the answer in its channel, never neither.
			c.mu.Lock()
			answer, ok := c.waiting[m.ID]
			delete(c.waiting, m.ID)
			if ok {
				answer <- a
			}
			c.mu.Unlock()
			if !ok {
				// Not on this goroutine: orphan sends, and a send must
				// never wait on the reader of the answers.
				go c.orphan(a)
			}
		case "exited":
			closeAll(fds)
			c.mu.Lock()
			if p, ok := c.procs[m.Pid]; ok {
				delete(c.procs, m.Pid)
				p.exit(m.Status, nil)
			} else if c.orphans[m.Pid] {
				delete(c.orphans, m.Pid)
			} else {
				c.exited[m.Pid] = m.Status
			}
			c.mu.Unlock()
		case "reaped":
			closeAll(fds)
			c.mu.Lock()
			if ch, ok := c.reaping[m.Pid]; ok {
				delete(c.reaping, m.Pid)
				close(ch)
			}
			c.mu.Unlock()
		default:
			closeAll(fds)
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %w", ErrClosed, err)
	for pid, p := range c.procs {
		delete(c.procs, pid)
		p.exit(uint32(syscall.SIGKILL), c.err)
	}
	c.mu.Unlock()
	close(c.done)
	c.conn.Close()
	if c.onClose != nil {
		c.onClose()
	}
}

// spawned is the answer to a spawn request, with the child's pidfd (-1 on
// error).
type spawned struct {
	message
	pidfd int
}

// Process is a child of the fork server. Its pid stays reserved (the
// child is not reaped) until Release, so the pid names this process for
// as long as the caller holds it unreleased.
type Process struct {
	Pid   int
	c     *Client
	pidfd int

	mu       sync.Mutex
	released bool

	done   chan struct{}
	status syscall.WaitStatus
	err    error
}

func (p *Process) exit(status uint32, err error) {
	p.status, p.err = syscall.WaitStatus(status), err
	close(p.done)
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports, without waiting, whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait blocks until the process has exited and returns its wait status;
// the error is non-nil if the fork server went away first (the process
// was then killed by its Pdeathsig, and the status says SIGKILL).
func (p *Process) Wait() (syscall.WaitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Signal sends sig through the process's pidfd: it can never reach
// another process, even after the pid is reused. It returns
// os.ErrProcessDone after Release.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released || p.pidfd < 0 {
		return os.ErrProcessDone
	}
	return unix.PidfdSendSignal(p.pidfd, sig, nil, 0)
}

// WithPidFD calls f with the process's pidfd, which names this process
// even once its pid is reused (setns(2) takes one since Linux 5.8), and
// returns f's error; Release waits until f has returned. It returns
// os.ErrProcessDone without calling f after Release or when the fork
// server sent no pidfd.
func (p *Process) WithPidFD(f func(pidfd int) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released || p.pidfd < 0 {
		return os.ErrProcessDone
	}
	return f(p.pidfd)
}

// ReleaseTimeout bounds how long Release waits for the fork server to
// reap a process.
const ReleaseTimeout = 5 * time.Second

// Release lets the fork server reap the process, closes its pidfd, and
// waits until the process is reaped: from then on the pid names nothing
// (or a new process), and no zombie of it is left on the host. A process
// still running is reaped when it exits, so the caller kills it first.
// Errors: ErrClosed (wrapped) if the fork server is gone (its children
// are then reaped by whoever inherits them); an error after
// ReleaseTimeout if the fork server did not answer. Later calls do
// nothing and return nil.
func (p *Process) Release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
	p.mu.Unlock()
	reaped := make(chan struct{})
	p.c.mu.Lock()
	if p.c.err != nil {
		p.c.mu.Unlock()
		return p.c.err
	}
	p.c.reaping[p.Pid] = reaped
	p.c.mu.Unlock()
	p.c.send.Lock()
	err := p.c.write(message{Op: "release", Pid: p.Pid})
	p.c.send.Unlock()
	if err != nil {
		return err
	}
	t := time.NewTimer(ReleaseTimeout)
	defer t.Stop()
	select {
	case <-reaped:
		return nil
	case <-p.c.done:
		return p.c.gone()
	case <-t.C:
		p.c.mu.Lock()
		if p.c.reaping[p.Pid] == reaped {
			delete(p.c.reaping, p.Pid)
		}
		p.c.mu.Unlock()
		return fmt.Errorf("forkserver: pid %d not reaped after %v", p.Pid, ReleaseTimeout)
	}
}

// encodeSys checks sys for fields the fork server does not carry and
// returns what it sends, with the cgroup descriptor to pass.
func encodeSys(sys *syscall.SysProcAttr) (*sysAttr, []int, error) {
	if sys == nil {
		return nil, nil, nil
	}
	carried := syscall.SysProcAttr{
		Cloneflags:                 sys.Cloneflags,
		UidMappings:                sys.UidMappings,
		GidMappings:                sys.GidMappings,
		GidMappingsEnableSetgroups: sys.GidMappingsEnableSetgroups,
		Credential:                 sys.Credential,
		Pdeathsig:                  sys.Pdeathsig,
		Setsid:                     sys.Setsid,
		UseCgroupFD:                sys.UseCgroupFD,
		CgroupFD:                   sys.CgroupFD,
	}
	if !reflect.DeepEqual(carried, *sys) {
		return nil, nil, errors.New("forkserver: Spawn.Sys sets a field the fork server does not carry")
	}
	a := &sysAttr{
		Cloneflags: sys.Cloneflags, UidMappings: sys.UidMappings, GidMappings: sys.GidMappings,
		Setgroups: sys.GidMappingsEnableSetgroups, Credential: sys.Credential,
		Pdeathsig: sys.Pdeathsig, Setsid: sys.Setsid, CgroupFD: sys.UseCgroupFD,
	}
	var fds []int
	if sys.UseCgroupFD {
		fds = append(fds, sys.CgroupFD)
	}
	return a, fds, nil
}

// Start starts a fork server from cmd (Path, Args with Arg first after
// the name, Env and Stderr as the caller wants) and returns its client.
// Start adds the socket as cmd.ExtraFiles[0] (ConnFD) and Pdeathsig
// SIGKILL, and calls cmd.Start through onThread, which must run its
// argument on an OS thread that lives as long as the process (Pdeathsig
// follows the forking thread). The client reaps cmd once the server has
// gone.
func Start(cmd *exec.Cmd, onThread func(func())) (*Client, error) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("forkserver: %w", os.NewSyscallError("socketpair", err))
	}
	if err := unix.SetNonblock(sp[0], true); err != nil {
		unix.Close(sp[0])
		unix.Close(sp[1])
		return nil, fmt.Errorf("forkserver: %w", err)
	}
	ours := os.NewFile(uintptr(sp[0]), "fork server socket")
	theirs := os.NewFile(uintptr(sp[1]), "fork server socket")
	cmd.ExtraFiles = append([]*os.File{theirs}, cmd.ExtraFiles...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	onThread(func() { err = cmd.Start() })
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("forkserver: start: %w", err)
	}
	c, err := NewClient(ours, func() { _ = cmd.Wait() })
	if err != nil {
		ours.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	c.pid = cmd.Process.Pid
	return c, nil
}
