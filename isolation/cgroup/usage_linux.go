package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"path/filepath"
	"sync/atomic"

	"github.com/containerd/cgroups/v3/cgroup1"
)

// userHZ is the unit of cpuacct.stat: USER_HZ, 100 on every Linux ABI
// (the kernel converts to clock_t for user space).
const userHZ = 100

// Usage reads what the sandbox consumed. Call it after the last process
// exited (or after Kill) and before Delete for final figures; it may also
// be called while processes run. See Usage's fields and the package doc
// for the sources.
func (m *Manager) Usage() (Usage, error) {
	u := Usage{Source: m.mode.String()}
	var err error
	if m.mode == V1 {
		err = m.usageV1(&u)
	} else {
		err = m.usageV2(&u)
	}
	if err != nil {
		return Usage{}, fmt.Errorf("read usage of %s: %w", m.Path(), err)
	}
	return u, nil
}

func (m *Manager) usageV2(u *Usage) error {
	cpu, err := readKeyed(m.file("", "cpu.stat"))
	if err != nil {
		return err
	}
	u.CPUUserMicros, u.CPUSystemMicros = cpu["user_usec"], cpu["system_usec"]
	if v, err := readSingle(m.file("", "memory.peak")); err == nil && !m.peaksReset.Load() {
		u.PeakMemoryBytes, u.PeakMemorySource = v, PeakSourcePeak
	} else if err == nil {
		cur, err := readSingle(m.file("", "memory.current"))
		if err != nil {
			return err
		}
		u.PeakMemoryBytes, u.PeakMemorySource = max(cur, m.memSeen.Load()), PeakSourceCurrent
	} else if errors.Is(err, fs.ErrNotExist) {
		cur, err := readSingle(m.file("", "memory.current"))
		if err != nil {
			return err
		}
		u.PeakMemoryBytes, u.PeakMemorySource = max(cur, m.memSeen.Load()), PeakSourceCurrent
	} else {
		return err
	}
	ev, err := readKeyed(m.file("", "memory.events"))
	if err != nil {
		return err
	}
	u.OOMKills = ev["oom_kill"]
	u.LimitOOMs, u.LimitOOMsRead = ev["oom"], true
	u.PidsPeak, err = m.pidsPeak()
	return err
}

// limitSlackBytes is how far below a v1 memory limit a peak still means
// the limit was reached: the kernel charges in batches (64 pages per
// CPU) and refuses the one that would pass the limit.
const limitSlackBytes = 1 << 20

func (m *Manager) usageV1(u *Usage) error {
	var err error
	if u.CPUUserMicros, u.CPUSystemMicros, err = cpuV1(m.dirs[string(cgroup1.Cpuacct)]); err != nil {
		return err
	}
	peak, err := readSingle(m.file(cgroup1.Memory, "memory.max_usage_in_bytes"))
	if err != nil {
		return err
	}
	u.PeakMemoryBytes, u.PeakMemorySource = peak, PeakSourceMaxUsage
	oc, err := readKeyed(m.file(cgroup1.Memory, "memory.oom_control"))
	if err != nil {
		return err
	}
	u.OOMKills = oc["oom_kill"]
	fail, err := readSingle(m.file(cgroup1.Memory, "memory.failcnt"))
	if err != nil {
		return err
	}
	// Without swap accounting there is no memsw counter.
	if sw, err := readSingle(m.file(cgroup1.Memory, "memory.memsw.failcnt")); err == nil {
		fail += sw
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Kernels since 6.14 no longer count failcnt: the limit was reached
	// too when the peak came within a charge batch of it.
	if fail == 0 {
		lim, err := readSingle(m.file(cgroup1.Memory, "memory.limit_in_bytes"))
		if err != nil {
			return err
		}
		if peak+limitSlackBytes >= lim {
			fail = 1
		}
	}
	u.LimitOOMs, u.LimitOOMsRead = fail, true
	u.PidsPeak, err = m.pidsPeak()
	return err
}

// cpuV1 reads the CPU time, user and system in µs, of the cgroup dir of
// the cpuacct hierarchy.
func cpuV1(dir string) (userMicros, systemMicros int64, err error) {
	user, uerr := readSingle(filepath.Join(dir, "cpuacct.usage_user"))
	sys, serr := readSingle(filepath.Join(dir, "cpuacct.usage_sys"))
	switch {
	case uerr == nil && serr == nil:
		// usage_user and usage_sys are tick-sampled (the whole tick
		// goes to whatever runs when it fires, IRQ time included) and
		// drift from the cgroup's scheduler runtime, cpuacct.usage, by
		// 10 % and more under load. Split the precise total in their
		// ratio, as the kernel's cputime_adjust does for getrusage and
		// cgroup v2's cpu.stat.
		if total, err := readSingle(filepath.Join(dir, "cpuacct.usage")); err == nil {
			user, sys = splitRuntime(total, user, sys)
		}
		return user / 1000, sys / 1000, nil // ns
	case errors.Is(uerr, fs.ErrNotExist) || errors.Is(serr, fs.ErrNotExist):
		// Kernels before 4.7: only cpuacct.stat, in USER_HZ ticks.
		st, err := readKeyed(filepath.Join(dir, "cpuacct.stat"))
		if err != nil {
			return 0, 0, err
		}
		return st["user"] * (1000000 / userHZ), st["system"] * (1000000 / userHZ), nil
	default:
		return 0, 0, errors.Join(uerr, serr)
	}
}

// pidsPeak reads pids.peak, or falls back to the sampled maximum.
func (m *Manager) pidsPeak() (int64, error) {
	v, err := readSingle(m.pidsFile("pids.peak"))
	if err == nil && !m.peaksReset.Load() {
		return v, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	cur, err := readSingle(m.pidsFile("pids.current"))
	if err != nil {
		return 0, err
	}
	return max(cur, m.pidsSeen.Load()), nil
}

// pidsFile is a pids interface file of the payload cgroup when there is
// one (the program's tasks, without the worker's threads), else of the
// sandbox cgroup.
func (m *Manager) pidsFile(name string) string {
	if d := m.payloadDir.Load(); d != nil {
		return filepath.Join(*d, name)
	}
	return m.file(cgroup1.Pids, name)
}

// Sample records pids.current (and, on v2 kernels without memory.peak,
// memory.current) for the peaks of kernels that do not keep them. It is
// cheap (one or two small reads) and ignores errors; call it periodically
// while the sandbox runs.
func (m *Manager) Sample() {
	if v, err := readSingle(m.pidsFile("pids.current")); err == nil {
		storeMax(&m.pidsSeen, v)
	}
	if m.mode == V2 && (m.peaksReset.Load() || !exists(m.file("", "memory.peak"))) {
		if v, err := readSingle(m.file("", "memory.current")); err == nil {
			storeMax(&m.memSeen, v)
		}
	}
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// OOMKilled reports whether the OOM killer killed a process in the cgroup:
// memory.events oom_kill > 0 on v2, memory.oom_control oom_kill > 0 on v1
// (Linux 4.13+; older v1 kernels have no counter, and under_oom 1 is
// reported instead). DESIGN.md: OOM takes precedence over "killed by
// SIGKILL" in the termination reason.
func (m *Manager) OOMKilled() (bool, error) {
	var (
		kv  map[string]int64
		err error
	)
	if m.mode == V1 {
		kv, err = readKeyed(m.file(cgroup1.Memory, "memory.oom_control"))
	} else {
		kv, err = readKeyed(m.file("", "memory.events"))
	}
	if err != nil {
		return false, fmt.Errorf("read OOM state of %s: %w", m.Path(), err)
	}
	if n, ok := kv["oom_kill"]; ok {
		return n > 0, nil
	}
	return kv["under_oom"] == 1, nil
}

// splitRuntime divides total (precise runtime, ns) between user and
// system time in the ratio of the sampled user and sys figures (ns),
// following the kernel's cputime_adjust: all of it goes to one side when
// the other sampled nothing.
func splitRuntime(total, user, sys int64) (int64, int64) {
	switch {
	case total <= 0 || user < 0 || sys < 0:
		return user, sys
	case sys == 0:
		return total, 0
	case user == 0:
		return 0, total
	}
	hi, lo := bits.Mul64(uint64(total), uint64(user))
	u, _ := bits.Div64(hi, lo, uint64(user+sys))
	return int64(u), total - int64(u)
}

// ResetPeaks starts the peaks over for a sandbox that serves another
// execution: on v1 memory.max_usage_in_bytes is reset to the current usage
// (writing 0). pids.peak and v2's memory.peak cannot be reset for readers
// that open them afresh (a write resets memory.peak only for the writer's
// file descriptor), so from now on Usage reports the sampled maxima
// instead (Sample; the current value when nothing sampled), which restart
// here: a peak shorter than the sampling interval can be missed, but no
// earlier execution's peak is reported.
func (m *Manager) ResetPeaks() error {
	m.peaksReset.Store(true)
	m.pidsSeen.Store(0)
	m.memSeen.Store(0)
	if m.mode == V1 {
		if err := writeExisting(m.file(cgroup1.Memory, "memory.max_usage_in_bytes"), "0"); err != nil {
			return fmt.Errorf("reset peak memory of %s: %w", m.Path(), err)
		}
	}
	return nil
}
