package cgroup

import (
	"fmt"
	"path"
	"strings"
)

// Mode is the cgroup version the host offers for sandbox cgroups.
type Mode int

const (
	// Unavailable: no cgroup hierarchy is mounted; sandboxes cannot be
	// confined. The zero value of Config.Mode means "detect", not this.
	Unavailable Mode = iota
	// V1 is the legacy hierarchy, one mount per controller (also chosen
	// on hybrid hosts, where the controllers sit on v1).
	V1
	// V2 is the unified hierarchy.
	V2
)

// String returns "unavailable", "cgroup v1" or "cgroup v2".
func (m Mode) String() string {
	switch m {
	case Unavailable:
		return "unavailable"
	case V1:
		return "cgroup v1"
	case V2:
		return "cgroup v2"
	default:
		return fmt.Sprintf("cgroup mode %d", int(m))
	}
}

// PayloadName is the child cgroup (see Manager.NewPayload) that holds a
// sandbox's runtime processes.
const PayloadName = "payload"

// WorkerLeafName is, on cgroup v2, the child cgroup of a sandbox that holds
// its worker (born there: Manager.FD). The sandbox cgroup itself holds no
// process, so that it may enable controllers for its children (the pids
// limit of the payload): cgroup-v2.rst, "No Internal Process Constraint".
const WorkerLeafName = "worker"

// SupervisorLeafName is, on cgroup v2, the leaf that Place moves the
// supervisor's processes into, below the cgroup it was started in, so that
// this cgroup may enable controllers for the sandboxes' parent.
const SupervisorLeafName = "supervisor"

// Defaults used when a Config or Limits field is zero.
const (
	// DefaultRoot is where the cgroup hierarchies are mounted.
	DefaultRoot = "/sys/fs/cgroup"
	// DefaultParent is the parent of every sandbox cgroup.
	DefaultParent = "/execfarm"
	// DefaultCPUPeriodMicros is the kernel's default CFS period (100 ms).
	DefaultCPUPeriodMicros uint64 = 100000
)

// Values of Usage.PeakMemorySource.
const (
	// PeakSourcePeak: v2 memory.peak, the kernel's high-water mark.
	PeakSourcePeak = "memory.peak"
	// PeakSourceMaxUsage: v1 memory.max_usage_in_bytes, the kernel's
	// high-water mark (page cache charged to the cgroup included).
	PeakSourceMaxUsage = "memory.max_usage_in_bytes"
	// PeakSourceCurrent: v2 kernels before 5.19 have no memory.peak; the
	// figure is the highest memory.current seen by Sample and at the read,
	// a lower bound of the true peak.
	PeakSourceCurrent = "memory.current"
)

// Limits are the resource limits of one sandbox cgroup. Every field's zero
// value means "no limit" (or the default, for CPUPeriodMicros).
type Limits struct {
	// MemoryMaxBytes limits memory in bytes, with swap 0: memory.max and
	// memory.swap.max=0 on v2; memory.limit_in_bytes and
	// memory.memsw.limit_in_bytes (where present) on v1. 0 = no limit.
	MemoryMaxBytes int64
	// PidsMax limits the number of tasks (processes and threads) in the
	// cgroup: pids.max. 0 = no limit.
	PidsMax int64
	// CPUQuotaMicros is the CPU time in µs the cgroup may use per
	// CPUPeriodMicros (cpu.max on v2, cpu.cfs_quota_us on v1); 200000 per
	// 100000 is two CPUs. 0 = no limit; otherwise at least 1000 (the
	// kernel's minimum).
	CPUQuotaMicros int64
	// CPUPeriodMicros is the CFS period in µs, 1000..1000000. 0 = 100000.
	CPUPeriodMicros uint64
	// CPUWeight is the cgroup's share of contended CPU against its
	// siblings, on cgroup v2's scale (cpu.weight, 1..10000); v1 gets
	// cpu.shares = CPUWeight·1024/100. 0 = DefaultCPUWeight.
	CPUWeight uint64
	// NoOOMGroup leaves memory.oom.group at 0 on v2: an OOM kill then
	// takes the one process the kernel picks (the largest), as on v1,
	// not every process of the cgroup. A session sandbox sets it: its
	// worker and its other execs must outlive one exec's OOM kill.
	// false = memory.oom.group 1 (v2).
	NoOOMGroup bool
}

// CPU weights (Limits.CPUWeight, Manager.SetCPUWeight).
const (
	// DefaultCPUWeight is the kernel's default: cpu.weight 100, cpu.shares
	// 1024.
	DefaultCPUWeight = 100
	// BackgroundCPUWeight is a tenth of the default: against one busy
	// default sibling the cgroup gets about 9% of a contended CPU, so that
	// it yields to them but still makes progress (a warm sandbox's
	// start-up must end within the start timeout on a saturated node).
	BackgroundCPUWeight = 10
)

// v1Shares converts a v2 cpu.weight to v1 cpu.shares (at least 2, the
// kernel's minimum).
func v1Shares(weight uint64) uint64 { return max(2, weight*1024/DefaultCPUWeight) }

func (l Limits) period() uint64 {
	if l.CPUPeriodMicros == 0 {
		return DefaultCPUPeriodMicros
	}
	return l.CPUPeriodMicros
}

// validate checks the ranges the kernel accepts
// (Documentation/scheduler/sched-bwc.rst: quota and period >= 1 ms,
// period <= 1 s).
func (l Limits) validate() error {
	switch {
	case l.MemoryMaxBytes < 0:
		return fmt.Errorf("%w: MemoryMaxBytes %d < 0", ErrInvalidLimits, l.MemoryMaxBytes)
	case l.PidsMax < 0:
		return fmt.Errorf("%w: PidsMax %d < 0", ErrInvalidLimits, l.PidsMax)
	case l.CPUQuotaMicros < 0:
		return fmt.Errorf("%w: CPUQuotaMicros %d < 0", ErrInvalidLimits, l.CPUQuotaMicros)
	case l.CPUQuotaMicros > 0 && l.CPUQuotaMicros < 1000:
		return fmt.Errorf("%w: CPUQuotaMicros %d < 1000", ErrInvalidLimits, l.CPUQuotaMicros)
	case l.CPUPeriodMicros != 0 && (l.CPUPeriodMicros < 1000 || l.CPUPeriodMicros > 1000000):
		return fmt.Errorf("%w: CPUPeriodMicros %d outside 1000..1000000", ErrInvalidLimits, l.CPUPeriodMicros)
	case l.CPUWeight > 10000:
		return fmt.Errorf("%w: CPUWeight %d outside 1..10000", ErrInvalidLimits, l.CPUWeight)
	}
	return nil
}

// Usage is what a sandbox consumed, read from its cgroup.
type Usage struct {
	// CPUUserMicros and CPUSystemMicros are CPU time in µs in user and
	// kernel mode, summed over every process that ran in the cgroup.
	CPUUserMicros, CPUSystemMicros int64
	// PeakMemoryBytes is the highest memory charge in bytes; see
	// PeakMemorySource for what it measures.
	PeakMemoryBytes int64
	// PeakMemorySource is the file PeakMemoryBytes came from: one of
	// PeakSourcePeak, PeakSourceMaxUsage, PeakSourceCurrent.
	PeakMemorySource string
	// PidsPeak is the highest number of the program's tasks at once (the
	// payload cgroup's when there is one, see Manager.NewPayload): pids.peak where
	// the kernel has it, else the highest pids.current seen by Sample and
	// at the read.
	PidsPeak int64
	// OOMKills counts processes the OOM killer killed in the cgroup
	// (v2 memory.events oom_kill; v1 memory.oom_control oom_kill, 0 on
	// kernels before 4.13).
	OOMKills int64
	// LimitOOMs counts the times the cgroup's own memory limit (or a
	// descendant's) was reached, so that an OOM kill in the cgroup is
	// its own: v2 memory.events oom (raised in the cgroup whose limit
	// was hit and its ancestors, never in a descendant); v1
	// memory.failcnt plus memory.memsw.failcnt (a charge refused at this
	// cgroup's own counter), or 1 when the kernel keeps no failcnt (6.14
	// and later) and memory.max_usage_in_bytes came within 1 MiB of
	// memory.limit_in_bytes. An OOM kill with LimitOOMs 0 came from an
	// ancestor's limit or the host's memory: the sandbox kept within its
	// own. Valid when LimitOOMsRead.
	LimitOOMs int64
	// LimitOOMsRead reports that LimitOOMs was read.
	LimitOOMsRead bool
	// Source is Mode.String() of the hierarchy read: "cgroup v1" or
	// "cgroup v2".
	Source string
}

// Config says where sandbox cgroups live. The zero value is the production
// default: detected mode, /sys/fs/cgroup, nested /execfarm.
type Config struct {
	// Mode selects the hierarchy; zero (Unavailable) means DetectMode().
	Mode Mode
	// Parent is the parent of the sandbox cgroups, a path relative to the
	// hierarchy root, e.g. "/execfarm". "" = DefaultParent. It is nested
	// under the supervisor's own cgroup (on v2 the one Place found) unless
	// AbsoluteParent is set; see the package doc.
	Parent string
	// AbsoluteParent takes Parent from the hierarchy root as is, without
	// nesting, and on v2 leaves the supervisor's own cgroup as it is (the
	// operator has delegated the controllers to Parent's parent). false =
	// nested.
	AbsoluteParent bool
	// NoPlace, on cgroup v2 with a nested Parent, keeps Place from moving
	// any process or enabling any controller: Probe then reports the
	// placement Place would make and checks that it can be made (the
	// controllers are delegated to the supervisor's cgroup, which is a
	// writable domain cgroup), without trying the controllers in a test
	// cgroup while the placement is not made. `execfarm doctor` sets it:
	// it reports what `serve` would do and changes nothing. false = Place
	// on first use.
	NoPlace bool
	// Root is the mountpoint of the hierarchy (v2) or of the directory
	// holding one mount per controller (v1). "" = DefaultRoot. Tests point
	// it at a fake tree in t.TempDir().
	Root string

	// afterMkdir, set only by this package's tests, runs right after a
	// sandbox cgroup directory is created, to play the kernel's part of
	// filling it with interface files in a fake tree.
	afterMkdir func(dir string) error
}

// withDefaults fills zero fields, except Mode, which the Linux code
// detects.
func (c Config) withDefaults() Config {
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if c.Parent == "" {
		c.Parent = DefaultParent
	}
	// Clean against "/" so that ".." cannot climb above the root.
	c.Parent = path.Clean("/" + c.Parent)
	return c
}

// validName checks that a sandbox cgroup name is one plain path element.
func validName(name string) error {
	switch {
	case name == "", name == ".", name == "..", len(name) > 255,
		strings.ContainsAny(name, "/\x00\n"):
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	return nil
}

// ControllerStatus is the probe's finding for one controller.
type ControllerStatus struct {
	// Name is the controller: memory, cpu, cpuacct (v1), pids, freezer
	// (v1).
	Name string
	// Available: the controller is mounted (v1) or listed in the parent's
	// cgroup.controllers (v2).
	Available bool
	// Writable: a test cgroup with the controller enabled could be
	// created and removed under Parent.
	Writable bool
	// Detail says why a controller is not available or not writable; ""
	// when it is both and was tried in a test cgroup, else what was
	// checked instead (Config.NoPlace).
	Detail string
}

// Placement is where, on cgroup v2, a supervisor's own processes and its
// sandboxes' parent sit (see Place).
type Placement struct {
	// Own is the supervisor's cgroup, relative to the hierarchy's root:
	// the cgroup it was started in (a systemd service's, a pod
	// container's, its cgroup namespace's root), which enables memory, cpu
	// and pids for its children. "/" when it is the hierarchy's real root.
	Own string
	// Leaf is the cgroup holding the supervisor's processes: Own +
	// "/" + SupervisorLeafName, or Own itself when Own is the real root
	// (which may hold processes and enable controllers at once).
	Leaf string
	// Moved counts the processes Place moved from Own into Leaf (with
	// NoPlace: the processes it would move).
	Moved int
	// Done: the placement is made (by this process or an earlier one);
	// false only with NoPlace before any supervisor placed itself.
	Done bool
}

// String describes the placement for the probe and `execfarm doctor`.
func (p Placement) String() string {
	switch {
	case p.Own == "":
		return ""
	case p.Leaf == p.Own:
		return fmt.Sprintf("supervisor in the root cgroup %s", p.Own)
	case p.Done && p.Moved > 0:
		return fmt.Sprintf("supervisor in %s (moved %d process(es) from %s, which enables memory, cpu, pids for its children)", p.Leaf, p.Moved, p.Own)
	case p.Done:
		return fmt.Sprintf("supervisor in %s (%s enables memory, cpu, pids for its children)", p.Leaf, p.Own)
	default:
		return fmt.Sprintf("supervisor cgroup %s: serve moves its %d process(es) into %s and enables memory, cpu, pids on %s", p.Own, p.Moved, p.Leaf, p.Own)
	}
}

// ProbeResult is what Probe found on the host.
type ProbeResult struct {
	// Mode is the hierarchy probed; Unavailable when there is none.
	Mode Mode
	// Root is the mountpoint probed.
	Root string
	// Placement is where the supervisor and the sandboxes' parent sit on
	// cgroup v2 with a nested Parent; zero otherwise.
	Placement Placement
	// Parents are the resolved parent directories of sandbox cgroups, one
	// per controller on v1, one on v2.
	Parents []string
	// Controllers lists every controller sandboxes need, in a fixed
	// order.
	Controllers []ControllerStatus
	// Warnings are facts that weaken or change a guarantee without making
	// the host unusable (no swap accounting, no pids.peak, ...).
	Warnings []string
	// Err is set when the probe itself failed (no hierarchy, parent
	// unresolvable).
	Err error
}

// Missing returns the names of the controllers that are not both available
// and writable. The supervisor refuses to start when it is not empty.
func (r ProbeResult) Missing() []string {
	var out []string
	for _, c := range r.Controllers {
		if !c.Available || !c.Writable {
			out = append(out, c.Name)
		}
	}
	return out
}

// OK reports whether sandboxes can be confined: no probe error and no
// missing controller.
func (r ProbeResult) OK() bool {
	return r.Err == nil && r.Mode != Unavailable && len(r.Missing()) == 0
}
