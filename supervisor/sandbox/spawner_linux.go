package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// workerCaps are the only capabilities a worker can ever hold, in its user
// namespace: CAP_SYS_ADMIN (mounts, pivot_root, sethostname, the cgroup
// namespace), CAP_NET_ADMIN (loopback up), CAP_SETPCAP (emptying its
// bounding set), CAP_SETUID and CAP_SETGID (runtime processes as uid 1000),
// CAP_KILL (killing them). The worker keeps only the last three after
// isolating itself.
var workerCaps = []int{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL}

// spawner forks every worker from one OS thread of the supervisor whose
// capability bounding set holds only workerCaps. A child inherits the
// bounding set of the thread that forked it, and a process that execs
// (the worker, root of its new user namespace) gets no capability outside
// its bounding set: so a worker never holds what it does not need, and has
// only those few to drop itself (each drop is a round trip to every one of
// its threads). Go forks on the calling thread; the thread is locked and
// never reused for anything else.
type spawner struct {
	once sync.Once
	err  error
	reqs chan func()
}

var theSpawner spawner

// run runs f (which forks) on the spawner's thread.
func (s *spawner) run(f func()) error {
	s.once.Do(func() {
		s.reqs = make(chan func())
		ready := make(chan error)
		go s.loop(ready)
		s.err = <-ready
	})
	if s.err != nil {
		return s.err
	}
	done := make(chan struct{})
	s.reqs <- func() { f(); close(done) }
	<-done
	return nil
}

// loop is the spawner's goroutine: it lives as long as the process (test
// suites that check for leaked goroutines ignore it by this name).
func (s *spawner) loop(ready chan<- error) {
	runtime.LockOSThread()
	if err := restrictThreadBounding(); err != nil {
		ready <- err
		return
	}
	close(ready)
	for f := range s.reqs {
		f()
	}
}

// restrictThreadBounding drops every capability but workerCaps from the
// calling thread's bounding set (prctl PR_CAPBSET_DROP is per thread).
func restrictThreadBounding() error {
	keep := map[int]bool{}
	for _, c := range workerCaps {
		keep[c] = true
	}
	for c := 0; c <= 63; c++ {
		if keep[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL { // past the kernel's last capability
				break
			}
			return fmt.Errorf("sandbox: restrict the spawner's bounding set: %w", os.NewSyscallError("prctl PR_CAPBSET_DROP", err))
		}
	}
	return nil
}
