package sandbox

import (
	"runtime"
	"sync"
)

// spawner forks every worker from one OS thread of the supervisor that
// lives as long as the process. A worker is started with Pdeathsig
// SIGKILL (so that it dies with a crashed supervisor), and the kernel
// sends that signal when the *thread* that forked the child exits, not
// the process: a worker forked from an ordinary Go thread would be killed
// the day the runtime ends that thread (it does when a goroutine exits
// while locked to it, as Reset's IPC clean-up does on purpose). Go forks
// on the calling thread; this one is locked and never ends.
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
// suites that check for leaked goroutines ignore it: SpawnerGoroutine).
func (s *spawner) loop() {
	runtime.LockOSThread()
	for f := range s.reqs {
		f()
	}
}
