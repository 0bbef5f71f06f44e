package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Manager is one sandbox's cgroup. Its methods are safe for concurrent
// use; Delete ends its use.
type Manager struct {
	mode Mode
	name string
	// dirs maps a v1 controller name (or unified on v2) to the cgroup's
	// absolute directory in that hierarchy.
	dirs map[string]string
	v1   cgroup1.Cgroup   // nil on v2 and for Cleanup's loaded cgroups
	v2   *cgroup2.Manager // nil on v1

	warnings []string

	afterMkdir func(dir string) error // Config.afterMkdir, for NewPayload
	payloadDir atomic.Pointer[string] // set by NewPayload

	mu      sync.Mutex // serialises Kill and Delete
	deleted bool

	pidsSeen atomic.Int64 // highest pids.current seen by Sample
	memSeen  atomic.Int64 // highest memory.current seen by Sample (v2 without memory.peak)
	// peaksReset: ResetPeaks ran, so pids.peak and v2's memory.peak (which
	// it cannot reset) no longer answer for the current execution; the
	// sampled figures do.
	peaksReset atomic.Bool
}

// New creates the cgroup Parent/name and sets its limits before any
// process is in it. name must be one path element that no live cgroup
// under Parent uses: an existing cgroup is never reused, since its
// counters (peak, OOM kills) would belong to someone else. On error nothing
// is left behind. Errors wrap ErrInvalidName, ErrInvalidLimits,
// ErrUnavailable or ErrControllerMissing where those apply.
func New(cfg Config, name string, l Limits) (*Manager, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	lay, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	m := &Manager{mode: lay.mode, name: name, dirs: lay.dirs(name), afterMkdir: lay.afterMkdir}
	if err := m.mkdirs(lay); err != nil {
		return nil, err
	}
	if lay.mode == V1 {
		err = m.createV1(lay, l)
	} else {
		err = m.createV2(lay, l)
	}
	if err != nil {
		for _, d := range m.uniqueDirs() {
			_ = removeTree(d) // best effort: the error above is the one to report
		}
		return nil, err
	}
	return m, nil
}

// mkdirs creates the parents as needed and the cgroup directories, which
// must not exist yet.
func (m *Manager) mkdirs(lay layout) error {
	var made []string
	for _, c := range lay.controllers() {
		dir := m.dirs[c]
		if slices.Contains(made, dir) {
			continue
		}
		_, err := lay.mkdirParents(filepath.Dir(dir))
		if err == nil {
			err = lay.mkdir(dir)
		}
		if err != nil {
			for _, d := range made {
				_ = removeTree(d)
			}
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w (a leftover: run Cleanup)", dir, err)
			}
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		made = append(made, dir)
	}
	return nil
}

// toSpec converts Limits to OCI resources, the input of containerd.
func toSpec(l Limits) *specs.LinuxResources {
	period := l.period()
	r := &specs.LinuxResources{
		Memory: &specs.LinuxMemory{},
		CPU:    &specs.LinuxCPU{Period: &period},
	}
	if l.MemoryMaxBytes > 0 {
		r.Memory.Limit = &l.MemoryMaxBytes
	}
	if l.CPUQuotaMicros > 0 {
		r.CPU.Quota = &l.CPUQuotaMicros
	}
	if l.PidsMax > 0 {
		r.Pids = &specs.LinuxPids{Limit: &l.PidsMax}
	}
	if l.CPUWeight > 0 {
		shares := v1Shares(l.CPUWeight)
		r.CPU.Shares = &shares // v1; createV2 sets the exact weight
	}
	return r
}

func (m *Manager) createV1(lay layout, l Limits) error {
	spec := toSpec(l)
	if l.MemoryMaxBytes > 0 {
		// memsw is memory+swap: equal to the memory limit, swap is 0.
		if exists(filepath.Join(lay.root, "memory", "memory.memsw.limit_in_bytes")) {
			spec.Memory.Swap = &l.MemoryMaxBytes
		} else {
			m.warnings = append(m.warnings, swapWarning("memory.memsw.limit_in_bytes"))
		}
		// v1 does not charge TCP socket buffers to memory.usage_in_bytes;
		// they have their own counter, unlimited unless this is set. v2
		// charges them to memory.max itself.
		if exists(filepath.Join(lay.root, "memory", "memory.kmem.tcp.limit_in_bytes")) {
			spec.Memory.KernelTCP = &l.MemoryMaxBytes
		} else {
			m.warnings = append(m.warnings, tcpWarning)
		}
	}
	path := func(n cgroup1.Name) (string, error) {
		if _, ok := lay.parents[string(n)]; !ok {
			return "", cgroup1.ErrControllerNotActive
		}
		return lay.group(string(n), m.name), nil
	}
	cg, err := cgroup1.New(path, spec, cgroup1.WithHierarchy(v1Hierarchy(lay.root)), strictInit)
	if err != nil {
		return fmt.Errorf("create cgroup %s with limits: %w", m.Path(), err)
	}
	m.v1 = cg
	return nil
}

// v1Hierarchy is exactly the controllers sandboxes use, under root; a
// missing one is an error, never skipped.
func v1Hierarchy(root string) cgroup1.Hierarchy {
	return func() ([]cgroup1.Subsystem, error) {
		for _, n := range v1Controllers {
			if !exists(filepath.Join(root, string(n))) {
				return nil, fmt.Errorf("%w: %s is not mounted under %s", ErrControllerMissing, n, root)
			}
		}
		return []cgroup1.Subsystem{
			cgroup1.NewMemory(root), cgroup1.NewCpu(root), cgroup1.NewCpuacct(root),
			cgroup1.NewPids(root), cgroup1.NewFreezer(root),
		}, nil
	}
}

// strictInit turns containerd's default of skipping an inactive
// controller into an error: a silent fallback to weaker isolation is a bug
// (DESIGN.md, "Isolation, in order").
func strictInit(c *cgroup1.InitConfig) error {
	c.InitCheck = func(s cgroup1.Subsystem, _ cgroup1.Path, err error) error {
		return fmt.Errorf("%w: %s: %v", ErrControllerMissing, s.Name(), err)
	}
	return nil
}

func (m *Manager) createV2(lay layout, l Limits) error {
	res := cgroup2.ToResources(toSpec(l))
	if l.CPUWeight > 0 {
		// containerd's shares→weight conversion is not our scale's inverse.
		res.CPU.Weight = &l.CPUWeight
	}
	if res.Pids == nil {
		res.Pids = &cgroup2.Pids{} // enables pids and writes pids.max "max"
	}
	mg, err := cgroup2.NewManager(lay.root, lay.group(unified, m.name), res)
	if err != nil {
		return fmt.Errorf("create cgroup %s with limits: %w", m.Path(), err)
	}
	m.v2 = mg
	dir := m.Path()
	// The worker's leaf: the sandbox cgroup holds no process itself, so
	// that it may enable pids for the payload (NewPayload).
	if err := lay.mkdir(filepath.Join(dir, WorkerLeafName)); err != nil {
		return fmt.Errorf("create worker cgroup of %s: %w", dir, err)
	}
	if swap := filepath.Join(dir, "memory.swap.max"); exists(swap) {
		if err := writeExisting(swap, "0"); err != nil {
			return fmt.Errorf("set swap limit of %s: %w", dir, err)
		}
	} else {
		m.warnings = append(m.warnings, swapWarning("memory.swap.max"))
	}
	// memory.oom.group (Linux 4.19+) makes an OOM kill take the whole
	// sandbox, not one process of it (unless NoOOMGroup).
	if l.NoOOMGroup {
		return nil
	}
	if err := writeExisting(filepath.Join(dir, "memory.oom.group"), "1"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: memory.oom.group (Linux 4.19+): %v", ErrControllerMissing, err)
		}
		return fmt.Errorf("set memory.oom.group of %s: %w", dir, err)
	}
	return nil
}

// load returns a Manager for an existing cgroup, for Cleanup.
func load(lay layout, name string) *Manager {
	return &Manager{mode: lay.mode, name: name, dirs: lay.dirs(name)}
}

// Path returns the cgroup's absolute directory: on v1 the one in the
// memory hierarchy (Paths has the others).
func (m *Manager) Path() string {
	if m.mode == V1 {
		return m.dirs[string(cgroup1.Memory)]
	}
	return m.dirs[unified]
}

// Paths returns the cgroup's absolute directory per v1 controller, or
// {"": dir} on v2.
func (m *Manager) Paths() map[string]string {
	out := make(map[string]string, len(m.dirs))
	for k, v := range m.dirs {
		out[k] = v
	}
	return out
}

// Mode returns the hierarchy the cgroup is in.
func (m *Manager) Mode() Mode { return m.mode }

// Warnings returns what New could not set and why (for example no swap
// accounting), for the supervisor's probe and logs.
func (m *Manager) Warnings() []string { return slices.Clone(m.warnings) }

// file is the path of an interface file of controller c (a v1 name; any
// value on v2).
func (m *Manager) file(c cgroup1.Name, name string) string {
	if m.mode == V1 {
		return filepath.Join(m.dirs[string(c)], name)
	}
	return filepath.Join(m.dirs[unified], name)
}

// uniqueDirs returns the cgroup's directories without repeats, in a fixed
// order.
func (m *Manager) uniqueDirs() []string {
	var out []string
	for _, c := range []string{unified, "memory", "cpu", "cpuacct", "pids", "freezer"} {
		if d, ok := m.dirs[c]; ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// FD opens the v2 sandbox cgroup's worker leaf (WorkerLeafName) with
// O_PATH|O_DIRECTORY|O_CLOEXEC, for SysProcAttr.UseCgroupFD/CgroupFD
// (clone3 CLONE_INTO_CGROUP, Linux 5.7+), so that the worker is born
// inside the sandbox, under its limits. The caller closes it after the
// fork. On v1 it returns an error wrapping ErrNotSupported: use AddProc.
func (m *Manager) FD() (*os.File, error) {
	if m.mode != V2 {
		return nil, fmt.Errorf("open cgroup fd of %s: %s has no CLONE_INTO_CGROUP: %w", m.Path(), m.mode, ErrNotSupported)
	}
	dir := filepath.Join(m.Path(), WorkerLeafName)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup fd of %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// SetCPUWeight changes the cgroup's CPU weight (Limits.CPUWeight's scale,
// 1..10000): cpu.weight on v2, cpu.shares on v1.
func (m *Manager) SetCPUWeight(weight uint64) error {
	if weight < 1 || weight > 10000 {
		return fmt.Errorf("set CPU weight of %s: %w: %d outside 1..10000", m.Path(), ErrInvalidLimits, weight)
	}
	var err error
	switch {
	case m.v1 != nil:
		shares := v1Shares(weight)
		err = m.v1.Update(&specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}})
	case m.v2 != nil:
		err = m.v2.Update(&cgroup2.Resources{CPU: &cgroup2.CPU{Weight: &weight}})
	default:
		err = fmt.Errorf("cgroup not created by New")
	}
	if err != nil {
		return fmt.Errorf("set CPU weight of %s: %w", m.Path(), err)
	}
	return nil
}

// AddProc moves process pid into the cgroup: into every controller's
// cgroup.procs on v1, into the worker leaf's cgroup.procs on v2 (where a
// worker is born there instead: FD). On v1 the worker must not run
// untrusted code before this returns (it waits on a sync pipe).
func (m *Manager) AddProc(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("add pid %d to %s: %w", pid, m.Path(), cgroup1.ErrInvalidPid)
	}
	var err error
	switch {
	case m.v1 != nil:
		err = m.v1.AddProc(uint64(pid))
	case m.v2 != nil:
		err = writeExisting(filepath.Join(m.Path(), WorkerLeafName, "cgroup.procs"), strconv.Itoa(pid))
	default:
		err = fmt.Errorf("cgroup not created by New")
	}
	if err != nil {
		return fmt.Errorf("add pid %d to %s: %w", pid, m.Path(), err)
	}
	return nil
}

// procs returns every pid in the cgroup and its descendants, over all its
// directories.
func (m *Manager) procs() ([]int, error) {
	var out []int
	for _, d := range m.uniqueDirs() {
		pids, err := readProcsTree(d)
		if err != nil {
			return nil, err
		}
		for _, p := range pids {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// Delete kills whatever is left in the cgroup, waits for it to exit, then
// removes its directories (descendants first). Both the wait and the
// removal's retries are bounded by removeTimeout. It is idempotent: after
// a successful Delete it returns nil and does nothing.
func (m *Manager) Delete() error { return m.deleteBy(time.Now().Add(removeTimeout)) }

// deleteBy is Delete, waiting for killed processes to exit until deadline.
func (m *Manager) deleteBy(deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleted {
		return nil
	}
	if m.removeEmpty() {
		m.deleted = true
		return nil
	}
	if err := m.killBy(deadline); err != nil {
		return fmt.Errorf("delete cgroup %s: %w", m.Path(), err)
	}
	var errs []error
	for _, d := range m.uniqueDirs() {
		if err := removeTreeBy(d, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete cgroup %s: %w", m.Path(), err)
	}
	m.deleted = true
	return nil
}

// removeEmpty is Delete's fast path, for the usual case of a sandbox whose
// processes are gone: it removes the payload child (and on v2 the worker
// leaf) and then the cgroup in every hierarchy, without listing processes or directories. The kernel
// refuses to remove a cgroup that has tasks (EBUSY) or children
// (ENOTEMPTY), so success proves the cgroup was empty. It reports whether
// everything is gone; otherwise Delete takes the general path (kill, then
// remove what is left), which also serves fake cgroupfs trees (plain
// directories holding files).
func (m *Manager) removeEmpty() bool {
	order := []string{PayloadName, ""} // the children, then the cgroup
	if m.mode == V2 {
		order = []string{PayloadName, WorkerLeafName, ""}
	}
	for _, d := range m.uniqueDirs() {
		for _, c := range order {
			if err := unix.Rmdir(filepath.Join(d, c)); err != nil && !errors.Is(err, unix.ENOENT) {
				return false
			}
		}
	}
	return true
}

// Cleanup kills the processes of, and removes, every cgroup under Parent:
// the leftovers of a crashed predecessor. Call it at start-up, before any
// sandbox of this process exists. It waits at most cleanupTimeout (30 s)
// in all for the killed processes to exit. It returns how many sandbox
// cgroups it removed; errors of single cgroups are joined.
func Cleanup(cfg Config) (removed int, err error) {
	lay, err := resolve(cfg)
	if err != nil {
		return 0, err
	}
	var names []string
	for _, c := range lay.controllers() {
		entries, err := os.ReadDir(lay.parentDir(c))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("list leftover cgroups: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	var errs []error
	deadline := time.Now().Add(cleanupTimeout)
	for _, n := range names {
		if err := load(lay, n).deleteBy(deadline); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// SiblingParents returns the parents of sandbox cgroups that sit next to
// cfg.Parent (in the same directory, in any hierarchy) and whose names
// start with prefix, as Config.Parent values, cfg.Parent itself left out:
// for a supervisor to find the parents of others, such as those a killed
// `execfarm run` left behind. Errors: resolving cfg; listing a directory.
func SiblingParents(cfg Config, prefix string) ([]string, error) {
	lay, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	own := path.Base(cfg.withDefaults().Parent)
	dir := path.Dir(cfg.withDefaults().Parent)
	var out []string
	for _, c := range lay.controllers() {
		entries, err := os.ReadDir(filepath.Dir(lay.parentDir(c)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list cgroup parents: %w", err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if e.IsDir() && e.Name() != own && strings.HasPrefix(e.Name(), prefix) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// RemoveParent removes the parent of sandbox cgroups (cfg.Parent, in every
// hierarchy) once it holds no sandbox cgroup: the last step of a clean
// shutdown, and of an embedded supervisor, whose parent is its own. A
// parent that still has children is left in place and reported.
func RemoveParent(cfg Config) error {
	lay, err := resolve(cfg)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range lay.controllers() {
		dir := lay.parentDir(c)
		if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: dir, Err: err})
		}
	}
	return errors.Join(errs...)
}
