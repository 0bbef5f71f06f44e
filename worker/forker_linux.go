package worker

import (
	"runtime"
	"syscall"

	"github.com/execfarm/execfarm/isolation/namespace"
)

// forker forks every runtime process from one OS thread that it keeps for
// itself. Namespace membership and the capability bounding set are per
// thread and a child inherits them from the thread that forked it, so
// state set on this thread alone reaches every runtime process: here, a
// cgroup namespace rooted at the sandbox's cgroup (the worker enters its
// cgroup only after it was forked, so its first cgroup namespace is rooted
// at the supervisor's).
type forker struct {
	reqs chan forkRequest
}

type forkRequest struct {
	argv0 string
	argv  []string
	attr  *syscall.ProcAttr
	reply chan forkReply
}

type forkReply struct {
	pid int
	err error
}

// start locks a new goroutine to its thread, unshares the cgroup namespace
// there, and serves fork requests on it for the worker's lifetime (the
// goroutine never unlocks, so Go never reuses the thread for anything
// else).
func (f *forker) start() error {
	f.reqs = make(chan forkRequest)
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := namespace.UnshareCgroup(); err != nil {
			ready <- err
			return
		}
		close(ready)
		for r := range f.reqs {
			pid, err := syscall.ForkExec(r.argv0, r.argv, r.attr)
			r.reply <- forkReply{pid, err}
		}
	}()
	return <-ready
}

// forkExec is syscall.ForkExec on the forker's thread.
func (f *forker) forkExec(argv0 string, argv []string, attr *syscall.ProcAttr) (int, error) {
	reply := make(chan forkReply, 1)
	f.reqs <- forkRequest{argv0, argv, attr, reply}
	r := <-reply
	return r.pid, r.err
}
