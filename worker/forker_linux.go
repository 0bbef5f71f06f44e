package worker

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/isolation/namespace"
)

// forker forks every runtime process, and signals them, from one OS thread
// that it keeps for itself. Namespace membership, the capability bounding
// set and the Landlock domain are per thread, and a child inherits them
// from the thread that forked it, so state set on this thread alone reaches
// every runtime process: here, a cgroup namespace rooted at the sandbox's
// cgroup (the worker enters its cgroup only after it was forked, so its
// first cgroup namespace is rooted at the supervisor's). Signals go out
// from the same thread because Landlock (ABI < 8) gives every thread a
// domain of its own when the worker restricts itself, and with signal
// scoping a thread may signal only processes of its own domain: the
// runtime processes are in the forker thread's.
type forker struct {
	reqs chan func()
}

// start locks a new goroutine to its thread, unshares the cgroup namespace
// there, moves the thread alone into the payload cgroup when given its
// tasks file (cgroup v1: every process forked from it is then born there),
// and serves requests on it for the worker's lifetime (the goroutine never
// unlocks, so Go never reuses the thread for anything else). It closes
// tasks unless keep (a session sandbox's forking thread comes back to the
// payload through it after each fork into an exec's cgroup).
func (f *forker) start(tasks *os.File, keep bool) error {
	f.reqs = make(chan func())
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := namespace.UnshareCgroup(); err != nil {
			ready <- err
			return
		}
		if tasks != nil {
			// "0" is the writing thread (tasks moves one thread).
			_, err := tasks.WriteString("0")
			if !keep {
				tasks.Close()
			}
			if err != nil {
				ready <- fmt.Errorf("forking thread into the payload cgroup: %w", err)
				return
			}
		}
		close(ready)
		for r := range f.reqs {
			r()
		}
	}()
	return <-ready
}

// do runs fn on the forker's thread and returns when it has run.
func (f *forker) do(fn func()) {
	done := make(chan struct{})
	f.reqs <- func() { fn(); close(done) }
	<-done
}

// kill is kill(2) on the forker's thread.
func (f *forker) kill(pid int, sig unix.Signal) (err error) {
	f.do(func() { err = unix.Kill(pid, sig) })
	return err
}
