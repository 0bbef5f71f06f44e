package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// placements caches Place's result per hierarchy root: where a process
// sits is a process-wide fact, made once (and again only after a failure).
var placements struct {
	sync.Mutex
	done map[string]Placement
}

// placeRounds bounds how often Place moves the processes it finds in its
// cgroup and retries enabling the controllers, which fails (EBUSY) while a
// process forked meanwhile is still there.
const placeRounds = 20

// Place puts the calling process where cgroup v2 lets it create sandbox
// cgroups next to itself, as container runtimes do in a cgroup they were
// given (cgroup-v2.rst, "No Internal Process Constraint" and
// "Delegation"): a cgroup that enables domain controllers (memory) for its
// children may hold no process itself. So, unless the process is in the
// hierarchy's real root (exempt from that rule), Place moves every process
// of the cgroup it was started in ("Own": a systemd service's, a pod
// container's, the root of its cgroup namespace) into the leaf
// Own/SupervisorLeafName, and enables memory, cpu and pids in Own's
// cgroup.subtree_control. Sandboxes then live under Own/Config.Parent.
// Every process of Own moves, not only this one: the rule is about the
// cgroup, and in a pod or a service they are this process's own (tini,
// a shell that started it). A process already in such a leaf of a cgroup
// so prepared (a restarted or second supervisor, or systemd's
// DelegateSubgroup=supervisor) is placed already: Place is idempotent.
//
// Place runs once per process and hierarchy; New, Cleanup and Probe call
// it through a nested Parent on v2, so callers need not. On v1, with
// Config.AbsoluteParent, or with Config.NoPlace it changes nothing (with
// NoPlace it reports what it would do, Done false). Errors wrap
// ErrNotDelegated (a controller absent from Own's cgroup.controllers, Own
// not a domain cgroup, its files not writable) or ErrUnavailable (this
// process is not where /proc/self/cgroup says under Config.Root: a host
// hierarchy mounted into a private cgroup namespace).
func Place(cfg Config) (Placement, error) {
	cfg = cfg.withDefaults()
	if cfg.Mode == Unavailable {
		cfg.Mode = DetectMode()
	}
	if cfg.Mode != V2 || cfg.AbsoluteParent {
		return Placement{}, nil
	}
	return place(cfg.Root, cfg.NoPlace)
}

func place(root string, noPlace bool) (Placement, error) {
	placements.Lock()
	defer placements.Unlock()
	if p, ok := placements.done[root]; ok {
		return p, nil
	}
	self, err := cgroup2.NestedGroupPath("")
	if err != nil {
		return Placement{}, fmt.Errorf("resolve own cgroup: %w", err)
	}
	p, err := placeAt(root, self, os.Getpid(), noPlace)
	if err != nil || !p.Done {
		return p, err
	}
	if placements.done == nil {
		placements.done = map[string]Placement{}
	}
	placements.done[root] = p
	return p, nil
}

// placeAt is Place for the process pid whose cgroup is self (relative to
// root), on the hierarchy mounted at root; tests give it fake trees.
func placeAt(root, self string, pid int, noPlace bool) (Placement, error) {
	self = path.Clean("/" + self)
	dir := func(g string) string { return filepath.Join(root, g) }
	pids, err := readPids(dir(self))
	if err != nil {
		// A 0 in cgroup.procs (a process of a pid namespace this one
		// cannot see, which it could not move) fails the parse.
		return Placement{}, fmt.Errorf("%w: list processes of the supervisor's cgroup: %v", ErrNotDelegated, err)
	}
	if !slices.Contains(pids, pid) {
		return Placement{}, fmt.Errorf("%w: this process (pid %d) is not in %s: %s is not the cgroup hierarchy as its cgroup namespace sees it (a host's hierarchy mounted into a private cgroup namespace?); mount cgroup2 inside the namespace, or use the host's cgroup namespace",
			ErrUnavailable, pid, filepath.Join(dir(self), "cgroup.procs"), root)
	}
	if self == "/" && !exists(filepath.Join(root, "cgroup.type")) {
		// The real root (only it lacks cgroup.type; a cgroup namespace's
		// root has one) may hold processes and enable controllers.
		return Placement{Own: "/", Leaf: "/", Done: true}, nil
	}
	if path.Base(self) == SupervisorLeafName {
		if up := path.Dir(self); prepared(dir(up)) {
			return Placement{Own: up, Leaf: self, Done: true}, nil
		}
	}
	p := Placement{Own: self, Leaf: path.Join(self, SupervisorLeafName)}
	if err := delegated(root, self); err != nil {
		return p, err
	}
	p.Moved = len(pids)
	if noPlace {
		return p, nil
	}
	p.Moved = 0
	if err := os.Mkdir(dir(p.Leaf), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return p, fmt.Errorf("%w: create %s: %v", ErrNotDelegated, dir(p.Leaf), err)
	}
	leaf, err := cgroup2.Load(p.Leaf, cgroup2.WithMountpoint(root))
	if err != nil {
		return p, err
	}
	enable := "+" + strings.Join(v2Controllers, " +")
	for round := range placeRounds {
		if round > 0 {
			// The kernel may answer EBUSY for a moment after the last
			// process left (crun retries too); a fork meanwhile is moved
			// by this round. At most 190 ms in all.
			time.Sleep(time.Duration(round) * time.Millisecond)
		}
		pids, err := readPids(dir(self))
		if err != nil {
			return p, fmt.Errorf("list processes of %s: %w", dir(self), err)
		}
		for _, q := range pids {
			if err := leaf.AddProc(uint64(q)); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // exited meanwhile
				}
				return p, fmt.Errorf("%w: move pid %d into %s: %v", ErrNotDelegated, q, dir(p.Leaf), err)
			}
			p.Moved++
		}
		err = writeExisting(filepath.Join(dir(self), "cgroup.subtree_control"), enable)
		if err == nil {
			p.Done = true
			return p, nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return p, fmt.Errorf("%w: enable %s in %s: %v", ErrNotDelegated, strings.Join(v2Controllers, ", "), filepath.Join(dir(self), "cgroup.subtree_control"), err)
		}
		// A process forked into Own meanwhile: move it too.
	}
	return p, fmt.Errorf("%w: %s kept getting new processes; could not empty it in %d rounds", ErrNotDelegated, dir(self), placeRounds)
}

// prepared reports whether the cgroup dir holds no process and enables
// every controller sandboxes need: a supervisor placed itself below it.
func prepared(dir string) bool {
	pids, err := readPids(dir)
	if err != nil || len(pids) > 0 {
		return false
	}
	b, err := readFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	on := strings.Fields(string(b))
	for _, c := range v2Controllers {
		if !slices.Contains(on, c) {
			return false
		}
	}
	return true
}

// delegated checks that the cgroup own can enable the sandboxes'
// controllers for its children: they are in its cgroup.controllers (its
// parent enabled them for it), it is a domain cgroup, and its
// cgroup.procs and cgroup.subtree_control are writable. Errors wrap
// ErrNotDelegated and name the missing delegation.
func delegated(root, own string) error {
	dir := filepath.Join(root, own)
	b, err := readFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("%w: read %s: %v", ErrNotDelegated, filepath.Join(dir, "cgroup.controllers"), err)
	}
	have := strings.Fields(string(b))
	var missing []string
	for _, c := range v2Controllers {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not in %s (it has %q): enable them in %s (systemd: Delegate=yes on the unit; a container: a runtime that delegates its cgroup)",
			ErrNotDelegated, strings.Join(missing, ", "), filepath.Join(dir, "cgroup.controllers"), strings.TrimSpace(string(b)), filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
	}
	if t, err := readFile(filepath.Join(dir, "cgroup.type")); err == nil && strings.TrimSpace(string(t)) != "domain" {
		return fmt.Errorf("%w: %s is a cgroup of type %q; sandboxes need a domain cgroup", ErrNotDelegated, own, strings.TrimSpace(string(t)))
	}
	for _, f := range []string{"cgroup.procs", "cgroup.subtree_control"} {
		if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
			return fmt.Errorf("%w: %s is not writable: %v", ErrNotDelegated, filepath.Join(dir, f), err)
		}
	}
	return nil
}

// readPids reads the pids of dir's cgroup.procs (not its descendants').
func readPids(dir string) ([]int, error) {
	b, err := readFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	return parsePids(b)
}
