package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/execfarm/execfarm/isolation/forkserver"
)

// spawner forks the fork server (which forks every worker) from one OS
// thread of the supervisor that lives as long as the process. The fork
// server is started with Pdeathsig SIGKILL (so that it, and with it every
// worker, dies with a crashed supervisor), and the kernel sends that
// signal when the *thread* that forked the child exits, not the process:
// a child forked from an ordinary Go thread would be killed the day the
// runtime ends that thread (it does when a goroutine exits while locked
// to it, as Reset's IPC clean-up does on purpose). Go forks on the
// calling thread; this one is locked and never ends.
type spawner struct {
	once sync.Once
	reqs chan func()
}

var theSpawner spawner

// run runs f (which forks) on the spawner's thread.
func (s *spawner) run(f func()) {
	s.once.Do(func() {
		s.reqs = make(chan func())
		go s.loop()
	})
	done := make(chan struct{})
	s.reqs <- func() { f(); close(done) }
	<-done
}

// loop is the spawner's goroutine: it lives as long as the process (test
// suites that check for leaked goroutines ignore it: ProcessGoroutines).
func (s *spawner) loop() {
	runtime.LockOSThread()
	for f := range s.reqs {
		f()
	}
}

// theForkServer is the process's fork server (package
// isolation/forkserver), started on first use from the sealed worker
// binary and again after it has gone.
var theForkServer struct {
	sync.Mutex
	c   *forkserver.Client
	pid int // the fork server's
}

// forkServer returns the running fork server, starting it from bin (any
// worker binary serves: the protocol is versioned) on the spawner's
// thread, so that its Pdeathsig follows a thread that never ends.
func forkServer(bin *SealedBinary) (*forkserver.Client, error) {
	theForkServer.Lock()
	defer theForkServer.Unlock()
	if c := theForkServer.c; c != nil {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
	}
	cmd := &exec.Cmd{
		Path: bin.ExecPath(),
		Args: []string{"execfarm-fork", forkserver.Arg},
		// One P: the fork server forks from one thread and waits.
		Env:    []string{"GOMAXPROCS=1"},
		Stderr: os.Stderr,
		Dir:    "/",
	}
	c, err := forkserver.Start(cmd, theSpawner.run)
	if err != nil {
		return nil, fmt.Errorf("sandbox: fork server: %w", err)
	}
	theForkServer.c, theForkServer.pid = c, cmd.Process.Pid
	return c, nil
}

func processFDs() []int {
	var fds []int
	sealed.Lock()
	for _, b := range sealed.m {
		fds = append(fds, int(b.f.Fd()))
	}
	sealed.Unlock()
	theForkServer.Lock()
	c, pid := theForkServer.c, theForkServer.pid
	theForkServer.Unlock()
	if c == nil {
		return fds
	}
	if fd := c.FD(); fd >= 0 {
		fds = append(fds, fd)
	}
	// exec.Cmd holds a pidfd of the fork server (os.Process) until its
	// Wait, when the fork server has gone.
	entries, _ := os.ReadDir("/proc/self/fdinfo")
	for _, e := range entries {
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err == nil && strings.Contains(string(info), "\nPid:\t"+strconv.Itoa(pid)+"\n") {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	return fds
}

// StartForkServer starts the process's fork server from cfg's worker
// binary, if it is not running, so that the first sandbox does not wait
// for it; a supervisor is ready to serve once it has. Sandboxes start it
// themselves when it has gone.
func StartForkServer(cfg *Config) error {
	bin, err := Seal(cfg.WorkerBinary)
	if err != nil {
		return err
	}
	_, err = forkServer(bin)
	return err
}

// ForkServerCheck reports whether the process's fork server can start
// sandboxes (forkserver.Client.Check): nil when it runs, or has not been
// started yet (the next sandbox starts it).
func ForkServerCheck() error {
	theForkServer.Lock()
	c := theForkServer.c
	theForkServer.Unlock()
	if c == nil {
		return nil
	}
	if err := c.Check(); err != nil && !errors.Is(err, forkserver.ErrClosed) {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
