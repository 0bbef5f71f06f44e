package cgroup

import (
	"fmt"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"
)

// killTimeout bounds how long Kill waits for the cgroup to empty (a
// variable for tests).
var killTimeout = 5 * time.Second

const (
	// freezeTimeout bounds how long Kill waits for a freeze to complete
	// (a task in uninterruptible sleep can hold it in FREEZING).
	freezeTimeout = time.Second
	// pollInterval is the pause between two reads of cgroup.procs or of
	// the freezer state while Kill waits. Past killTimeout (Delete waits
	// up to removeTimeout) the pause doubles up to maxPollInterval.
	pollInterval    = 2 * time.Millisecond
	maxPollInterval = 250 * time.Millisecond
)

// Kill sends SIGKILL to every process in the cgroup and its descendants,
// then waits, bounded by a deadline, until cgroup.procs is empty
// everywhere. On v2 it writes "1" to cgroup.kill (Linux 5.14+), which also
// catches processes forked meanwhile; without cgroup.kill (older v2) and
// on v1 it freezes the cgroup, signals every pid listed and thaws it, so
// that nothing forks or exits (and frees its pid for reuse) between the
// listing and the signal. When no freezer works, it re-signals the pids
// still listed until the cgroup is empty. A killed process that is a child
// of the caller stays a zombie until the caller waits for it; zombies are
// not listed in cgroup.procs, so Kill does not wait for the reaping.
// Errors wrap ErrKillTimeout when processes remain.
func (m *Manager) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleted {
		return nil
	}
	return m.killBy(time.Now().Add(killTimeout))
}

// Only reports whether no process but pid is in the cgroup or its
// descendants: cgroup.procs lists neither a process that has exited (a
// zombie) nor one whose threads have all begun to exit, so none of the
// others can run any more. It reads one hierarchy (v1: pids, where the
// payload is), a fifth of the cost of all five: a process placed with
// AddProc is in every hierarchy once that returns, and its descendants
// are born there, so every hierarchy lists the same processes (only Kill,
// which may run while AddProc places a process, reads them all). After
// Delete it reports false.
func (m *Manager) Only(pid int) (bool, error) {
	others, err := m.Others(pid)
	return err == nil && others != nil && len(others) == 0, err
}

// Others lists the processes in the cgroup or its descendants other than
// pid (host pids), from one hierarchy as Only does; after Delete, nil.
// The list is empty, not nil, when pid is alone.
func (m *Manager) Others(pid int) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleted {
		return nil, nil
	}
	dir, ok := m.dirs[unified]
	if !ok {
		dir, ok = m.dirs[string(cgroup1.Pids)]
	}
	if !ok {
		return nil, fmt.Errorf("list processes of %s: no pids hierarchy", m.Path())
	}
	pids, err := readProcsTree(dir)
	if err != nil {
		return nil, fmt.Errorf("list processes of %s: %w", m.Path(), err)
	}
	others := []int{}
	for _, p := range pids {
		if p != pid {
			others = append(others, p)
		}
	}
	return others, nil
}

// killBy is Kill, waiting until deadline for the cgroup to empty. A
// killed process stays listed in cgroup.procs until it has released its
// memory and files, which takes seconds for one that holds tens of
// thousands of mapped files (over 10 s under the cgroup v2 VM's emulated
// CPU): Delete waits for it up to its removal deadline, not killTimeout.
func (m *Manager) killBy(deadline time.Time) error {
	resignal := false
	killFile := m.file("", "cgroup.kill")
	if m.mode == V2 && exists(killFile) {
		if err := writeExisting(killFile, "1"); err != nil {
			return fmt.Errorf("kill cgroup %s: %w", m.Path(), err)
		}
	} else if pids, err := m.procs(); err == nil && len(pids) == 0 {
		// Nothing to kill (the usual case once the sandbox's init is
		// gone): no freeze.
		return nil
	} else {
		frozen, err := m.freezeKillThaw()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", m.Path(), err)
		}
		resignal = !frozen
	}
	pause, slow := pollInterval, time.Now().Add(killTimeout)
	for {
		pids, err := m.procs()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: list processes: %w", m.Path(), err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: %w: pids %v", m.Path(), ErrKillTimeout, pids)
		}
		if resignal {
			signalAll(pids)
		}
		time.Sleep(pause)
		if time.Now().After(slow) {
			pause = min(2*pause, maxPollInterval)
		}
	}
}

// freezeKillThaw freezes the cgroup (bounded), signals every listed pid
// and thaws it. It reports whether the freeze completed; a failed or
// unfinished freeze is not an error (the caller then re-signals), a failed
// thaw is.
func (m *Manager) freezeKillThaw() (frozen bool, err error) {
	frozen = m.freeze()
	pids, lerr := m.procs()
	signalAll(pids)
	if frozen || m.freezeRequested() {
		if terr := m.thaw(); terr != nil {
			return frozen, fmt.Errorf("thaw: %w", terr)
		}
	}
	if lerr != nil {
		return frozen, fmt.Errorf("list processes: %w", lerr)
	}
	return frozen, nil
}

// freeze requests a freeze and waits, bounded, for it to complete.
func (m *Manager) freeze() bool {
	var (
		file, value string
		done        func() bool
	)
	switch m.mode {
	case V1:
		file, value = m.file(cgroup1.Freezer, "freezer.state"), "FROZEN"
		done = func() bool {
			b, err := readFile(file)
			return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
		}
	case V2:
		file, value = m.file("", "cgroup.freeze"), "1"
		done = func() bool {
			kv, err := readKeyed(m.file("", "cgroup.events"))
			return err == nil && kv["frozen"] == 1
		}
	default:
		return false
	}
	if err := writeExisting(file, value); err != nil {
		return false
	}
	deadline := time.Now().Add(freezeTimeout)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
	return true
}

// freezeRequested reports whether a freeze was asked for and may be in
// progress, so that it must be undone.
func (m *Manager) freezeRequested() bool {
	switch m.mode {
	case V1:
		b, err := readFile(m.file(cgroup1.Freezer, "freezer.state"))
		return err == nil && strings.TrimSpace(string(b)) != "THAWED"
	case V2:
		b, err := readFile(m.file("", "cgroup.freeze"))
		return err == nil && strings.TrimSpace(string(b)) == "1"
	}
	return false
}

func (m *Manager) thaw() error {
	switch m.mode {
	case V1:
		return writeExisting(m.file(cgroup1.Freezer, "freezer.state"), "THAWED")
	case V2:
		return writeExisting(m.file("", "cgroup.freeze"), "0")
	}
	return nil
}

// signalAll sends SIGKILL to every pid. ESRCH (already gone) is expected;
// as root no other error can happen, and there is nothing to do about one.
func signalAll(pids []int) {
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGKILL)
	}
}
