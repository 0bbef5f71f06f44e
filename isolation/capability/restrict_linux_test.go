//go:build linux

package capability

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// helperReport is what the helper prints as JSON.
type helperReport struct {
	// Before counts threads that held more than keep before Restrict.
	Before int
	// Threads is every thread's sets after Restrict.
	Threads map[int]State
	// ThreadsAtStart is the number of threads when Restrict ran.
	ThreadsAtStart int
	// Child is the status Cap* lines of a uid-1000 child forked from an
	// arbitrary thread after Restrict.
	Child State
	// Err is the first error the helper met.
	Err string
}

var keep = Of(SetUID, SetGID, Kill)

// runHelper pins several goroutines to their own threads (so the process
// has threads that Restrict's caller never runs on), restricts, and forks
// an unprivileged child from one of those other threads.
func runHelper() int {
	var rep helperReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	const pinned = 4
	var ready, release sync.WaitGroup
	ready.Add(pinned)
	release.Add(1)
	forkReq := make(chan chan error)
	for i := 0; i < pinned; i++ {
		go func(i int) {
			runtime.LockOSThread()
			ready.Done()
			if i == 0 {
				// This thread forks the child after Restrict, though
				// Restrict never ran on it directly.
				ch := <-forkReq
				ch <- forkChild(&rep.Child)
			}
			release.Wait()
		}(i)
	}
	ready.Wait()
	ths, err := Threads()
	if err != nil {
		rep.Err = err.Error()
		return 1
	}
	rep.ThreadsAtStart = len(ths)
	for _, st := range ths {
		if st.Bounding != 0 {
			rep.Before++
		}
	}
	if err := Restrict(keep); err != nil {
		rep.Err = err.Error()
		release.Done()
		return 1
	}
	ch := make(chan error)
	forkReq <- ch
	if err := <-ch; err != nil {
		rep.Err = err.Error()
	}
	// Read while the pinned threads still live (a locked thread exits
	// with its goroutine).
	if rep.Threads, err = Threads(); err != nil {
		rep.Err = err.Error()
	}
	release.Done()
	return 0
}

func forkChild(st *State) error {
	cmd := exec.Command("/bin/cat", "/proc/self/status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("child: %w", err)
	}
	*st, err = ParseStatus(strings.NewReader(string(out)))
	return err
}

// TestRestrictEveryThread runs the helper and checks that every thread,
// not only the caller's, lost the bounding set and all but keep, and that
// a uid-1000 child forked from another thread has no capability at all.
func TestRestrictEveryThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SETPCAP) to shrink the bounding set")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var rep helperReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("helper output %q: %v (exit: %v)", out, jerr, err)
	}
	if err != nil || rep.Err != "" {
		t.Fatalf("helper: %v %s", err, rep.Err)
	}
	if rep.ThreadsAtStart < 5 || rep.Before != rep.ThreadsAtStart {
		t.Fatalf("control: %d threads, %d with a bounding set; want >= 5, all", rep.ThreadsAtStart, rep.Before)
	}
	if len(rep.Threads) < rep.ThreadsAtStart {
		t.Fatalf("after: %d threads, want >= %d", len(rep.Threads), rep.ThreadsAtStart)
	}
	for tid, st := range rep.Threads {
		want := State{Permitted: keep, Effective: keep}
		if st != want {
			t.Errorf("thread %d: %+v, want %+v", tid, st, want)
		}
	}
	if rep.Child != (State{}) {
		t.Errorf("uid-1000 child: %+v, want every set empty", rep.Child)
	}
}
