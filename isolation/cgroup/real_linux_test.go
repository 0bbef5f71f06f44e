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
	"testing"
	"time"
)

// requireRoot skips a test that needs root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// requireCgroup returns a Config on the host's real hierarchy with a
// Parent private to this test process, removed at cleanup. It skips when
// the host has no hierarchy or lacks a controller, and fails when the
// probe finds a controller but cannot create a cgroup with it.
func requireCgroup(t *testing.T) Config {
	t.Helper()
	requireRoot(t)
	cfg := Config{Parent: fmt.Sprintf("/execfarm-test-%d", os.Getpid())}
	r := Probe(cfg)
	if r.Mode == Unavailable {
		t.Skipf("no cgroup hierarchy: %v", r.Err)
	}
	if r.Err != nil {
		t.Fatalf("probe: %v", r.Err)
	}
	for _, c := range r.Controllers {
		if !c.Available {
			t.Skipf("controller %s not available: %s", c.Name, c.Detail)
		}
		if !c.Writable {
			t.Fatalf("controller %s is available but not writable: %s", c.Name, c.Detail)
		}
	}
	t.Cleanup(func() { cleanupParent(t, cfg) })
	return cfg
}

// cleanupParent removes every cgroup the test left under cfg's Parent and
// the Parent itself, and fails the test if there was something to remove.
func cleanupParent(t *testing.T, cfg Config) {
	t.Helper()
	n, err := Cleanup(cfg)
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
	if n != 0 {
		t.Errorf("test left %d cgroup(s) behind", n)
	}
	lay, err := resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lay.controllers() {
		if err := removeTree(lay.parentDir(c)); err != nil {
			t.Errorf("remove test parent: %v", err)
		}
	}
}

func newManager(t *testing.T, cfg Config, name string, l Limits) *Manager {
	t.Helper()
	m, err := New(cfg, name, l)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	t.Cleanup(func() {
		if err := m.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
	})
	return m
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestRealNewWritesLimits(t *testing.T) {
	cfg := requireCgroup(t)
	l := Limits{MemoryMaxBytes: 64 << 20, PidsMax: 32, CPUQuotaMicros: 50000, CPUPeriodMicros: 200000}
	m := newManager(t, cfg, "limits", l)
	type file struct{ ctrl, name, want string }
	var files []file
	if m.Mode() == V1 {
		files = []file{
			{"memory", "memory.limit_in_bytes", "67108864"},
			{"pids", "pids.max", "32"},
			{"cpu", "cpu.cfs_quota_us", "50000"},
			{"cpu", "cpu.cfs_period_us", "200000"},
		}
		if exists(filepath.Join(m.Paths()["memory"], "memory.kmem.tcp.limit_in_bytes")) {
			// TCP socket buffers have their own counter on v1.
			files = append(files, file{"memory", "memory.kmem.tcp.limit_in_bytes", "67108864"})
		} else if !slices.Contains(m.Warnings(), tcpWarning) {
			t.Error("no memory.kmem.tcp.limit_in_bytes and no warning")
		}
		if exists(filepath.Join(m.Paths()["memory"], "memory.memsw.limit_in_bytes")) {
			files = append(files, file{"memory", "memory.memsw.limit_in_bytes", "67108864"})
		} else if len(m.Warnings()) == 0 {
			t.Error("no memsw file and no warning")
		}
	} else {
		files = []file{
			{"", "memory.max", "67108864"},
			{"", "memory.oom.group", "1"},
			{"", "pids.max", "32"},
			{"", "cpu.max", "50000 200000"},
		}
		if exists(filepath.Join(m.Path(), "memory.swap.max")) {
			files = append(files, file{"", "memory.swap.max", "0"})
		}
		// Every process of a v2 sandbox is in a leaf: none in the
		// sandbox cgroup, which carries the limits.
		if !exists(filepath.Join(m.Path(), WorkerLeafName, "cgroup.procs")) {
			t.Errorf("no worker leaf %s in %s", WorkerLeafName, m.Path())
		}
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			if got := readTrim(t, filepath.Join(m.Paths()[f.ctrl], f.name)); got != f.want {
				t.Errorf("%s = %q, want %q", f.name, got, f.want)
			}
		})
	}
	if _, err := New(cfg, "limits", l); !errors.Is(err, os.ErrExist) {
		t.Errorf("second New with the same name = %v, want ErrExist", err)
	}
}

// TestRealSetCPUWeight: a background cgroup starts with the lowest
// weight and gets the default back; v1 shows it as cpu.shares.
func TestRealSetCPUWeight(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "weight", Limits{CPUWeight: BackgroundCPUWeight})
	file, low, normal := filepath.Join(m.Path(), "cpu.weight"), "10", "100"
	if m.Mode() == V1 {
		file, low, normal = filepath.Join(m.Paths()["cpu"], "cpu.shares"), "102", "1024"
	}
	if got := readTrim(t, file); got != low {
		t.Errorf("%s after New = %q, want %q", file, got, low)
	}
	if err := m.SetCPUWeight(DefaultCPUWeight); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, file); got != normal {
		t.Errorf("%s after SetCPUWeight(default) = %q, want %q", file, got, normal)
	}
}

func TestRealAddProcKillDelete(t *testing.T) {
	cfg := requireCgroup(t)
	m, err := New(cfg, "addproc", Limits{PidsMax: 16})
	if err != nil {
		t.Fatal(err)
	}
	cmd := startSleep(t)
	if err := m.AddProc(cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	for ctrl, dir := range m.Paths() {
		pids, err := readProcsTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(pids, cmd.Process.Pid) {
			t.Errorf("pid %d not in %s cgroup.procs (%s): %v", cmd.Process.Pid, ctrl, dir, pids)
		}
		// v2: in the worker leaf; the sandbox cgroup itself holds none.
		leaf := dir
		if m.Mode() == V2 {
			leaf = filepath.Join(dir, WorkerLeafName)
		}
		tasks, err := os.ReadFile(filepath.Join(leaf, "cgroup.procs"))
		if err != nil || !strings.Contains(string(tasks), strconv.Itoa(cmd.Process.Pid)) {
			t.Errorf("pid %d not in %s/cgroup.procs: %q %v", cmd.Process.Pid, leaf, tasks, err)
		}
	}
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if pids, err := m.procs(); err != nil || len(pids) != 0 {
		t.Errorf("after Kill procs = %v, %v; want none", pids, err)
	}
	wantSIGKILL(t, cmd.Wait())
	if err := m.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, dir := range m.Paths() {
		if exists(dir) {
			t.Errorf("%s still exists after Delete", dir)
		}
	}
	if err := m.Delete(); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
}

// TestRealOnly: Only sees another process until it has exited, even
// while it is a zombie nobody has reaped (a run's result is published on
// Only's word, before the teardown reaps anything).
func TestRealOnly(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "only", Limits{PidsMax: 16})
	keep, other := startSleep(t), startSleep(t)
	for _, c := range []*exec.Cmd{keep, other} {
		if err := m.AddProc(c.Process.Pid); err != nil {
			t.Fatalf("AddProc: %v", err)
		}
	}
	if only, err := m.Only(keep.Process.Pid); err != nil || only {
		t.Fatalf("Only with another process running = %v, %v; want false", only, err)
	}
	if err := other.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped: wait until the kernel shows it a zombie.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", other.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed process never became a zombie: %s", b)
		}
		time.Sleep(time.Millisecond) // polling interval
	}
	if only, err := m.Only(keep.Process.Pid); err != nil || !only {
		t.Fatalf("Only with the other process a zombie = %v, %v; want true", only, err)
	}
	wantSIGKILL(t, other.Wait())
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	wantSIGKILL(t, keep.Wait())
	if err := m.Delete(); err != nil {
		t.Fatal(err)
	}
	if only, err := m.Only(keep.Process.Pid); err != nil || only {
		t.Errorf("Only after Delete = %v, %v; want false", only, err)
	}
}

func TestRealKillTree(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "tree", Limits{PidsMax: 16})
	h := startHelper(t, "spawn")
	if err := m.AddProc(h.cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	h.start(t)
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read grandchildren: %v", err)
	}
	var kids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q", f)
		}
		kids = append(kids, pid)
	}
	procs, _ := m.procs()
	for _, k := range kids {
		if !slices.Contains(procs, k) {
			t.Fatalf("grandchild %d not in the cgroup: %v", k, procs)
		}
	}
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	wantSIGKILL(t, h.cmd.Wait())
	for _, k := range kids {
		// Reparented to init, a killed grandchild is a zombie or gone.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", k))
		if err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] != "Z" {
				t.Errorf("grandchild %d is alive (state %s) after Kill", k, f[0])
			}
		}
	}
}

func TestRealUsage(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "usage", Limits{MemoryMaxBytes: 256 << 20, PidsMax: 64})
	h := startHelper(t, "busy")
	if err := m.AddProc(h.cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	m.Sample()
	h.start(t)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("busy helper: %v", err)
	}
	u, err := m.Usage()
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	t.Logf("usage: %+v", u)
	if u.CPUUserMicros+u.CPUSystemMicros <= 0 {
		t.Errorf("cpu time = %d+%d µs, want > 0", u.CPUUserMicros, u.CPUSystemMicros)
	}
	if u.PeakMemoryBytes < 16<<20 {
		t.Errorf("peak memory = %d, want >= 16 MiB (the helper touched 16 MiB)", u.PeakMemoryBytes)
	}
	wantSource := map[Mode][]string{V1: {PeakSourceMaxUsage}, V2: {PeakSourcePeak, PeakSourceCurrent}}[m.Mode()]
	if !slices.Contains(wantSource, u.PeakMemorySource) {
		t.Errorf("peak source = %q, want one of %v", u.PeakMemorySource, wantSource)
	}
	if u.PidsPeak < 1 {
		t.Errorf("pids peak = %d, want >= 1", u.PidsPeak)
	}
	if u.OOMKills != 0 || u.Source != m.Mode().String() {
		t.Errorf("OOMKills %d Source %q, want 0 %q", u.OOMKills, u.Source, m.Mode())
	}
	if oom, err := m.OOMKilled(); err != nil || oom {
		t.Errorf("OOMKilled() = %v, %v; want false", oom, err)
	}
}

func TestRealOOM(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "oom", Limits{MemoryMaxBytes: 32 << 20, PidsMax: 64})
	h := startHelper(t, "alloc")
	if err := m.AddProc(h.cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	h.start(t)
	wantSIGKILL(t, h.cmd.Wait())
	oom, err := m.OOMKilled()
	if err != nil || !oom {
		t.Fatalf("OOMKilled() = %v, %v; want true", oom, err)
	}
	u, err := m.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want >= 1", u.OOMKills)
	}
	if !u.LimitOOMsRead || u.LimitOOMs < 1 {
		t.Errorf("LimitOOMs = %d (read %v), want >= 1: the sandbox's own limit was reached", u.LimitOOMs, u.LimitOOMsRead)
	}
	// The kernel charges in pages and may overshoot the limit by a few.
	if u.PeakMemoryBytes > 33<<20 || u.PeakMemoryBytes < 16<<20 {
		t.Errorf("peak = %d, want near the 32 MiB limit", u.PeakMemoryBytes)
	}
}

func TestRealCleanupRemovesLeftover(t *testing.T) {
	cfg := requireCgroup(t)
	m, err := New(cfg, "leftover", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := startSleep(t)
	if err := m.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// No Delete: the predecessor "crashed".
	n, err := Cleanup(cfg)
	if err != nil || n != 1 {
		t.Fatalf("Cleanup() = %d, %v; want 1, nil", n, err)
	}
	wantSIGKILL(t, cmd.Wait())
	for _, dir := range m.Paths() {
		if exists(dir) {
			t.Errorf("%s survived Cleanup", dir)
		}
	}
}

func TestRealFD(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "fd", Limits{})
	f, err := m.FD()
	if m.Mode() == V1 {
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("FD() on v1 = %v, want ErrNotSupported", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("FD(): %v", err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start in cgroup: %v", err)
	}
	procs, _ := m.procs()
	if !slices.Contains(procs, cmd.Process.Pid) {
		t.Errorf("child %d not born in the cgroup: %v", cmd.Process.Pid, procs)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	wantSIGKILL(t, cmd.Wait())
}

func TestRealProbe(t *testing.T) {
	cfg := requireCgroup(t)
	r := Probe(cfg)
	if !r.OK() {
		t.Fatalf("Probe not OK: %+v", r)
	}
	want := map[Mode][]string{V1: {"memory", "cpu", "cpuacct", "pids", "freezer"}, V2: {"memory", "cpu", "pids"}}[r.Mode]
	var got []string
	for _, c := range r.Controllers {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("controllers = %v, want %v", got, want)
	}
	for _, p := range r.Parents {
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				if e.IsDir() {
					t.Errorf("probe left %s in %s", e.Name(), p)
				}
			}
		}
	}
	t.Logf("probe: %+v", r)
}

// TestRealDeleteKillsWhatRuns: Delete's fast path (remove the empty
// directories) fails on a cgroup that still has a task, and the general
// path then kills it and removes the cgroup and its payload child.
func TestRealDeleteKillsWhatRuns(t *testing.T) {
	cfg := requireCgroup(t)
	m, err := New(cfg, "delete-live", Limits{PidsMax: 16})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.NewPayload(8)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := startSleep(t)
	if err := m.AddProc(cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	if err := m.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantSIGKILL(t, cmd.Wait())
	for _, dir := range m.Paths() {
		if exists(dir) {
			t.Errorf("%s still exists after Delete", dir)
		}
	}
}

// TestRealOOMOfAnAncestor: a process killed by the OOM killer for its
// parent's memory limit, its own sandbox's far above what it used, is
// counted as an OOM kill in the sandbox (OOMKills) but not as its own
// limit reached (LimitOOMs 0): the caller does not report the sandbox as
// over its memory limit.
func TestRealOOMOfAnAncestor(t *testing.T) {
	cfg := requireCgroup(t)
	m := newManager(t, cfg, "victim", Limits{MemoryMaxBytes: 512 << 20, PidsMax: 64})
	lay, err := resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limitFile := filepath.Join(lay.parentDir("memory"), "memory.limit_in_bytes")
	if lay.mode == V2 {
		limitFile = filepath.Join(lay.parentDir(unified), "memory.max")
	}
	if err := os.WriteFile(limitFile, []byte(strconv.Itoa(48<<20)), 0o644); err != nil {
		t.Fatalf("limit the parent: %v", err)
	}
	h := startHelper(t, "alloc")
	if err := m.AddProc(h.cmd.Process.Pid); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	h.start(t)
	wantSIGKILL(t, h.cmd.Wait())
	u, err := m.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills < 1 || !u.LimitOOMsRead || u.LimitOOMs != 0 {
		t.Errorf("OOMKills %d, LimitOOMs %d (read %v): want an OOM kill that is not its own limit's", u.OOMKills, u.LimitOOMs, u.LimitOOMsRead)
	}
}
