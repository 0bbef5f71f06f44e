package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// Probe reports, for the host and cfg, the cgroup mode and for every
// controller sandboxes need (memory, cpu, cpuacct, pids, freezer on v1;
// memory, cpu, pids on v2) whether it is available and writable: it
// creates and removes a test cgroup under Parent. It also lists warnings,
// facts that weaken a guarantee or change a figure's source. The
// supervisor refuses to start unless the result is OK (DESIGN.md: the
// probe reports which layers the host supports; a silent fallback is a
// bug). Parents that Probe had to create are removed again.
func Probe(cfg Config) ProbeResult {
	lay, err := resolve(cfg)
	r := ProbeResult{Mode: lay.mode, Root: lay.root, Placement: lay.placement}
	if err != nil {
		r.Err = err
		return r
	}
	for _, c := range lay.controllers() {
		r.Parents = append(r.Parents, lay.parentDir(c))
	}
	name := fmt.Sprintf(".probe-%d", os.Getpid())
	if lay.mode == V1 {
		probeV1(&r, lay, name)
	} else {
		probeV2(&r, lay, name)
		parent := lay.parentDir(unified)
		if r.OK() && (lay.placement.Done || cfg.AbsoluteParent) && isCgroupFS(lay.root) {
			existed := exists(parent)
			if err := trySandboxV2(cfg, name); err != nil {
				r.Err = fmt.Errorf("sandbox cgroup layout trial under %s: %w", parent, err)
			}
			if !existed {
				_ = unix.Rmdir(parent) // as after the controllers' test cgroups
			}
		}
	}
	return r
}

// trialBinary is run by trySandboxV2: it blocks reading stdin until
// killed.
const trialBinary = "/bin/cat"

// trySandboxV2 makes one sandbox cgroup as a sandbox gets it (limits,
// worker leaf, payload with its pids limit), starts a process born in the
// worker leaf (CLONE_INTO_CGROUP), moves it into the payload through the
// payload's cgroup.procs, kills the cgroup and removes it: the kernel's
// rules on v2 (no internal processes, delegation, threaded vs domain) are
// checked by the kernel itself, not assumed.
func trySandboxV2(cfg Config, name string) (err error) {
	m, err := New(cfg, name+"-sandbox", Limits{MemoryMaxBytes: 64 << 20, PidsMax: 16, CPUQuotaMicros: 100000})
	if err != nil {
		return err
	}
	defer func() {
		if derr := m.Delete(); err == nil {
			err = derr
		}
	}()
	procs, err := m.NewPayload(8)
	if err != nil {
		return err
	}
	defer procs.Close()
	fd, err := m.FD()
	if err != nil {
		return err
	}
	cmd := exec.Command(trialBinary)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd()), Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	fd.Close()
	if err != nil {
		return fmt.Errorf("start %s in %s: %w", trialBinary, filepath.Join(m.Path(), WorkerLeafName), err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed: the status says nothing
	}()
	if _, err := procs.WriteString(strconv.Itoa(cmd.Process.Pid)); err != nil {
		return fmt.Errorf("move a process from %s to %s: %w", WorkerLeafName, PayloadName, err)
	}
	return m.Kill()
}

func probeV1(r *ProbeResult, lay layout, name string) {
	for _, n := range v1Controllers {
		c := string(n)
		st := ControllerStatus{Name: c}
		if !exists(filepath.Join(lay.root, c, "cgroup.procs")) {
			st.Detail = fmt.Sprintf("not mounted at %s", filepath.Join(lay.root, c))
			r.Controllers = append(r.Controllers, st)
			continue
		}
		st.Available = true
		err := withTestCgroup(lay, lay.parentDir(c), name, func(dir string) error {
			if n == "pids" && !exists(filepath.Join(dir, "pids.peak")) {
				r.Warnings = append(r.Warnings, "pids.peak is absent: the pids peak is the highest pids.current sampled")
			}
			return nil
		})
		if err != nil {
			st.Detail = err.Error()
		} else {
			st.Writable = true
		}
		r.Controllers = append(r.Controllers, st)
	}
	mem := filepath.Join(lay.root, "memory")
	if exists(mem) && !exists(filepath.Join(mem, "memory.memsw.limit_in_bytes")) {
		r.Warnings = append(r.Warnings, swapWarning("memory.memsw.limit_in_bytes"))
	}
	if kv, err := readKeyed(filepath.Join(mem, "memory.oom_control")); err == nil {
		if _, ok := kv["oom_kill"]; !ok {
			r.Warnings = append(r.Warnings, "memory.oom_control has no oom_kill counter (Linux < 4.13): OOM kills are inferred from under_oom and not counted")
		}
	}
	if exists(mem) && !exists(filepath.Join(lay.root, "cpuacct", "cpuacct.usage_user")) {
		r.Warnings = append(r.Warnings, "cpuacct.usage_user is absent (Linux < 4.7): CPU time comes from cpuacct.stat in 10 ms ticks")
	}
	r.Warnings = append(r.Warnings, "cgroup v1 has no memory.oom.group: the OOM killer kills one process, and the supervisor kills the rest of the sandbox when it sees the OOM kill")
}

func probeV2(r *ProbeResult, lay layout, name string) {
	r.Placement = lay.placement
	parent := lay.parentDir(unified)
	avail, from, err := nearestControllers(lay.root, parent)
	if err != nil {
		r.Err = err
		return
	}
	if p := lay.placement; p.Own != "" && !p.Done {
		// Config.NoPlace before any placement: Place checked that the
		// controllers are delegated; trying them needs the placement.
		for _, c := range v2Controllers {
			r.Controllers = append(r.Controllers, ControllerStatus{Name: c, Available: true, Writable: true,
				Detail: fmt.Sprintf("delegated to %s (not tried: serve enables it there at start)", p.Own)})
		}
		return
	}
	for _, c := range v2Controllers {
		st := ControllerStatus{Name: c, Available: slices.Contains(avail, c)}
		if !st.Available {
			st.Detail = fmt.Sprintf("not in %s", filepath.Join(from, "cgroup.controllers"))
			r.Controllers = append(r.Controllers, st)
			continue
		}
		err := withTestCgroup(lay, parent, name, func(dir string) error {
			m, err := cgroup2.Load(strings.TrimPrefix(dir, filepath.Clean(lay.root)), cgroup2.WithMountpoint(lay.root))
			if err != nil {
				return err
			}
			if err := m.ToggleControllers([]string{c}, cgroup2.Enable); err != nil {
				return err
			}
			got, err := m.Controllers()
			if err != nil {
				return err
			}
			if !slices.Contains(got, c) {
				return fmt.Errorf("%w: %s not enabled in %s after writing cgroup.subtree_control", ErrControllerMissing, c, dir)
			}
			if c == "memory" {
				probeV2Memory(r, dir)
				if !exists(filepath.Join(dir, "memory.oom.group")) {
					return fmt.Errorf("%w: memory.oom.group (Linux 4.19+)", ErrControllerMissing)
				}
			}
			if c == "pids" && !exists(filepath.Join(dir, "pids.peak")) {
				r.Warnings = append(r.Warnings, "pids.peak is absent: the pids peak is the highest pids.current sampled")
			}
			if c == "cpu" {
				if !exists(filepath.Join(dir, "cgroup.kill")) {
					r.Warnings = append(r.Warnings, "cgroup.kill is absent (Linux < 5.14): Kill freezes the cgroup and signals each process")
				}
			}
			return nil
		})
		if err != nil {
			st.Detail = err.Error()
		} else {
			st.Writable = true
		}
		r.Controllers = append(r.Controllers, st)
	}
}

func probeV2Memory(r *ProbeResult, dir string) {
	if !exists(filepath.Join(dir, "memory.swap.max")) {
		r.Warnings = append(r.Warnings, swapWarning("memory.swap.max"))
	}
	if !exists(filepath.Join(dir, "memory.peak")) {
		r.Warnings = append(r.Warnings, "memory.peak is absent (Linux < 5.19): peak memory is the highest memory.current sampled, a lower bound")
	}
}

// nearestControllers reads cgroup.controllers of dir or of its nearest
// existing ancestor at or below root.
func nearestControllers(root, dir string) ([]string, string, error) {
	root = filepath.Clean(root)
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		b, err := readFile(filepath.Join(d, "cgroup.controllers"))
		if err == nil {
			return strings.Fields(string(b)), d, nil
		}
		if !errors.Is(err, os.ErrNotExist) || d == root || len(d) < len(root) {
			return nil, d, fmt.Errorf("read controllers of %s: %w", dir, err)
		}
	}
}

// withTestCgroup creates parent (as needed) and parent/name, runs fn on
// it, and removes what it created.
func withTestCgroup(lay layout, parent, name string, fn func(dir string) error) (err error) {
	created, err := lay.mkdirParents(parent)
	defer func() {
		for _, d := range created { // deepest first
			if rerr := removeTree(d); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	if err != nil {
		return err
	}
	dir := filepath.Join(parent, name)
	if err := lay.mkdir(dir); err != nil {
		return fmt.Errorf("create test cgroup %s: %w", dir, err)
	}
	defer func() {
		if rerr := removeTree(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return fn(dir)
}

// ParentWritable reports whether sandbox cgroups can be created under
// cfg's Parent now: for each parent directory (one per controller on v1,
// one on v2) the directory, or its nearest existing ancestor while the
// first sandbox has not created it, must be writable by this process
// (access(2) with W_OK; a read-only mount fails it even for root, with
// EROFS). Unlike Probe it creates nothing, so a readiness probe may call
// it every few seconds. It returns nil when every parent is writable,
// else an error naming the directory.
func ParentWritable(cfg Config) error {
	lay, err := resolve(cfg)
	if err != nil {
		return err
	}
	for _, c := range lay.controllers() {
		dir := lay.parentDir(c)
		for !exists(dir) && dir != filepath.Dir(dir) {
			dir = filepath.Dir(dir)
		}
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return fmt.Errorf("cgroup parent %s is not writable: %w", dir, err)
		}
	}
	return nil
}
