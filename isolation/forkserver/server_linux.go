//go:build linux

package forkserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"github.com/execfarm/execfarm/isolation/oomscore"

	"golang.org/x/sys/unix"
)

// maxMessage bounds one datagram (a request's argv and env, the worker's
// configuration included, are a few KiB).
const maxMessage = 1 << 20

// maxFDs bounds the descriptors one request carries.
const maxFDs = 16

// Main is the fork server's entry point, for the worker binary's main
// when os.Args[1] is Arg: it serves ConnFD and returns the exit code.
func Main() int {
	if err := Serve(ConnFD); err != nil {
		fmt.Fprintln(os.Stderr, "execfarm fork server:", err)
		return 1
	}
	return 0
}

// Serve runs the fork server on socket fd until the client closes it, then
// returns nil (the process should exit: its children get their
// Pdeathsig). It must be called from the main goroutine of a process that
// does nothing else; it locks that goroutine to its thread for good.
func Serve(fd int) error {
	runtime.LockOSThread() // never unlocked: children's Pdeathsig follows this thread
	// Run from a sealed memfd, the process is named after its fd number.
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&[]byte("execfarm-fork\x00")[0])), 0, 0, 0)
	// Nothing the fork server holds may reach a child: not its socket
	// (fd, which exec.Cmd's ExtraFiles left inheritable; a child holding
	// it could ask for children outside any namespace), nor whatever the
	// supervisor itself inherited without close-on-exec. A child's
	// descriptors are exactly its Spawn.Files.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("forkserver: %w", os.NewSyscallError("close_range", err))
	}
	// Workers and their runtime processes never sit below 0 in the OOM
	// killer's order, whatever the supervisor's own adjustment: written
	// by root, this value is also the floor they inherit.
	if err := oomscore.Floor(); err != nil {
		return fmt.Errorf("forkserver: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("forkserver: %w", err)
	}
	conn := os.NewFile(uintptr(fd), "fork server socket") // non-blocking: joins the poller
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("forkserver: %w", err)
	}
	s := &server{rc: rc, procs: map[int]*child{}}
	if err := s.send(message{Op: "hello", Version: version}); err != nil {
		return err
	}
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	for {
		m, fds, err := recvMsg(rc, buf, oob)
		if errors.Is(err, io.EOF) {
			return nil // the client closed the socket
		}
		if err != nil {
			return fmt.Errorf("forkserver: receive: %w", err)
		}
		switch m.Op {
		case "spawn":
			s.spawn(m, fds)
		case "release":
			closeAll(fds)
			s.release(m.Pid)
		default:
			closeAll(fds)
			return fmt.Errorf("forkserver: unknown request %q", m.Op)
		}
	}
}

type server struct {
	rc    syscall.RawConn
	mu    sync.Mutex
	procs map[int]*child
}

// child is a process the server forked and has not reaped.
type child struct {
	pidfd    *os.File
	exited   bool
	released bool
}

func (s *server) send(m message, fds ...int) error { return sendMsg(s.rc, m, fds...) }

// spawn forks and executes one child and answers "spawned". fds are the
// executable, the child's files, then its cgroup fd; all are closed here.
func (s *server) spawn(m message, fds []int) {
	defer closeAll(fds)
	pid, pidfd, err := forkExec(m, fds)
	if err != nil {
		_ = s.send(message{Op: "spawned", ID: m.ID, Err: err.Error(), Errno: errnoOf(err)})
		return
	}
	// Non-blocking before os.NewFile, so the file joins the poller.
	_ = unix.SetNonblock(pidfd, true)
	c := &child{pidfd: os.NewFile(uintptr(pidfd), "pidfd "+strconv.Itoa(pid))}
	s.mu.Lock()
	s.procs[pid] = c
	err = s.send(message{Op: "spawned", ID: m.ID, Pid: pid}, pidfd)
	s.mu.Unlock()
	if err != nil {
		// The client is gone: the child dies with this process.
		return
	}
	go s.watch(pid, c)
}

func forkExec(m message, fds []int) (pid, pidfd int, err error) {
	want := 1 + m.Files
	sys := m.Sys
	if sys == nil {
		sys = &sysAttr{}
	}
	if sys.CgroupFD {
		want++
	}
	if len(fds) != want || m.Files >= minExecFD || len(m.Argv) == 0 {
		return 0, 0, fmt.Errorf("forkserver: malformed spawn request (%d descriptors for %d files, %d arguments)", len(fds), m.Files, len(m.Argv))
	}
	exe, err := unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, minExecFD)
	if err != nil {
		return 0, 0, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	defer unix.Close(exe)
	files := make([]uintptr, m.Files)
	for i := range files {
		files[i] = uintptr(fds[1+i])
	}
	pidfd = -1
	attr := &syscall.ProcAttr{
		Dir:   m.Dir,
		Env:   m.Env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Cloneflags:                 sys.Cloneflags,
			UidMappings:                sys.UidMappings,
			GidMappings:                sys.GidMappings,
			GidMappingsEnableSetgroups: sys.Setgroups,
			Credential:                 sys.Credential,
			Pdeathsig:                  sys.Pdeathsig,
			Setsid:                     sys.Setsid,
			PidFD:                      &pidfd,
		},
	}
	if sys.CgroupFD {
		attr.Sys.UseCgroupFD = true
		attr.Sys.CgroupFD = fds[len(fds)-1]
	}
	uid, gid, owned, err := namespaceOwner(sys)
	if err != nil {
		return 0, 0, err
	}
	forkExec := func() { pid, err = syscall.ForkExec("/proc/self/fd/"+strconv.Itoa(exe), m.Argv, attr) }
	if owned {
		// The new user namespace is owned by the sandbox's own host ids,
		// not by root (owner_linux.go).
		if oerr := asOwner(uid, gid, forkExec); oerr != nil {
			return 0, 0, fmt.Errorf("forkserver: fork as the user namespace's owner: %w", oerr)
		}
	} else {
		forkExec()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("fork/exec %s: %w", m.Argv[0], err)
	}
	if pidfd < 0 {
		// Not reachable on Linux ≥ 5.3 (CLONE_PIDFD), which sandboxes need
		// anyway; kill rather than keep a child we could not track.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return 0, 0, errors.New("forkserver: no pidfd for the child (kernel without CLONE_PIDFD)")
	}
	return pid, pidfd, nil
}

// watch waits, without reaping, for child pid to exit and reports it;
// if it was released meanwhile it is reaped at once. The pidfd is
// non-blocking and waited for through the runtime's poller (a pidfd polls
// readable once its process has exited), so no thread is parked per
// child.
func (s *server) watch(pid int, c *child) {
	rc, err := c.pidfd.SyscallConn()
	var status uint32
	if err == nil {
		var werr error
		err = rc.Read(func(fd uintptr) bool {
			var info unix.Siginfo
			werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			switch {
			case errors.Is(werr, unix.EAGAIN), errors.Is(werr, unix.EINTR):
				return false
			case werr != nil:
				return true
			case siginfoPid(&info) == 0: // WNOHANG: still running
				return false
			}
			status = waitStatus(&info)
			return true
		})
		if err == nil {
			err = werr
		}
	}
	if err != nil {
		status = uint32(syscall.SIGKILL) // unknown: report a kill
	}
	// The report goes out before exited is set, under the lock: a release
	// reaps only an exited child, so the pid cannot be reused, and a new
	// child's "spawned" cannot name it, before the client has this report.
	s.mu.Lock()
	_ = s.send(message{Op: "exited", Pid: pid, Status: status})
	c.exited = true
	released := c.released
	s.mu.Unlock()
	if released {
		s.reap(pid, c)
	}
}

// release reaps pid once it has exited (now, or when watch sees it).
func (s *server) release(pid int) {
	s.mu.Lock()
	c, ok := s.procs[pid]
	if ok {
		c.released = true
	}
	exited := ok && c.exited
	s.mu.Unlock()
	if exited {
		s.reap(pid, c)
	}
}

// reap reaps exited child pid and answers "reaped". All of it happens
// under the lock, which spawn takes before it records a new child and
// says "spawned": once reaped, the pid may come back for a new child, and
// the client must hear "reaped" first (wait4 on an exited child does not
// block).
func (s *server) reap(pid int, c *child) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[pid] == c {
		delete(s.procs, pid)
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	c.pidfd.Close()
	_ = s.send(message{Op: "reaped", Pid: pid})
}

// siginfo layout on 64-bit Linux: si_signo, si_errno, si_code, padding,
// then for SIGCHLD si_pid, si_uid, si_status.
func siginfoBytes(info *unix.Siginfo) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(info)), unsafe.Sizeof(*info))
}

func siginfoPid(info *unix.Siginfo) int32 {
	return int32(binary.NativeEndian.Uint32(siginfoBytes(info)[16:]))
}

// waitStatus turns waitid's siginfo (si_code, si_status for SIGCHLD) into
// a wait(2) status word.
func waitStatus(info *unix.Siginfo) uint32 {
	raw := siginfoBytes(info)
	code := int32(binary.NativeEndian.Uint32(raw[8:]))
	st := binary.NativeEndian.Uint32(raw[24:])
	switch code {
	case 1: // CLD_EXITED
		return (st & 0xff) << 8
	case 3: // CLD_DUMPED
		return st&0x7f | 0x80
	default: // CLD_KILLED
		return st & 0x7f
	}
}
