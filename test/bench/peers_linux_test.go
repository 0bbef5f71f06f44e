package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// The bwrap table (BenchmarkVersusBwrap) runs each execfarm series beside
// Debian's bubblewrap running /bin/true, in ABAB rounds (bwrap first in
// even rounds, execfarm first in odd ones), and gives the medians over
// the rounds of each number and of each ratio to bwrap's number of the
// same round. EXECFARM_BENCH_ROUNDS (default 3) and
// EXECFARM_BENCH_SECONDS (default 20, the throughput runs' length) change
// the run's length; EXECFARM_BENCH_SETUPS (a comma-separated list of
// pool0, pool4, reuse; default all) picks the series.
const (
	defaultRounds  = 3
	defaultSeconds = 20
	// backgroundFor is how long the host's CPU use is sampled with
	// nothing of the benchmark running, before each throughput pair.
	backgroundFor = 2 * time.Second
	// idleFor is how long a full warm pool is watched for CPU use.
	idleFor = 3 * time.Second
)

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// peerRow is one execfarm series of the bwrap table.
type peerRow struct {
	setup  poolSetup
	refill bool // latency only: wait for a full pool before each request
	rt     sandboxv1.Runtime
	code   string
}

func (r peerRow) String() string {
	var kind string
	switch {
	case r.setup.size == 0:
		kind = "pool 0"
	case r.setup.reuse > 1:
		kind = fmt.Sprintf("pool %d + reuse %d", r.setup.size, r.setup.reuse)
	case r.refill:
		kind = fmt.Sprintf("pool %d, refilled", r.setup.size)
	default:
		kind = fmt.Sprintf("pool %d, back-to-back", r.setup.size)
	}
	rt := "shell true"
	if r.rt == sandboxv1.Runtime_RUNTIME_GOJA {
		rt = "goja console.log(1)"
	}
	return kind + ", " + rt
}

// measured is one round of one series: latency percentiles, and with a
// throughput run, executions per second and host CPU per execution.
type measured struct {
	p50, p99 time.Duration
	perSec   float64
	cpu      time.Duration // host-wide, background subtracted
	own      time.Duration // the benchmark's own processes (ownCPU)
}

// hostBusy returns the host's busy CPU time so far, all CPUs: user, nice,
// system, irq and softirq from /proc/stat (idle, iowait and steal left
// out).
func hostBusy(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		b.Fatalf("parse /proc/stat: %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("parse /proc/stat: %q", line)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// background returns the host's busy CPU per second with nothing of the
// benchmark running (other users of a shared machine).
func background(b *testing.B) float64 {
	t0, c0 := time.Now(), hostBusy(b)
	time.Sleep(backgroundFor) // a measurement window, not synchronisation
	return float64(hostBusy(b)-c0) / time.Since(t0).Seconds()
}

// rateCPU runs fn from clients goroutines for d (see rate) and returns
// calls per second, host CPU per call with bg (busy CPU per second of the
// host without the benchmark) subtracted, and own's CPU per call.
func rateCPU(b *testing.B, d time.Duration, bg float64, own *ownCPU, fn func() error) (m measured) {
	b.Helper()
	t0, c0, o0 := time.Now(), hostBusy(b), own.used(b)
	perSec, err := rate(d, fn)
	if err != nil {
		b.Fatal(err)
	}
	wall := time.Since(t0).Seconds()
	calls := perSec * wall
	busy := float64(hostBusy(b)-c0) - bg*wall
	m.perSec = perSec
	m.cpu = time.Duration(max(0, busy) / calls)
	m.own = time.Duration(float64(own.used(b)-o0) / calls)
	return m
}

// abPair measures fn beside bwrap in one round, bwrap first when
// bwrapFirst and last otherwise: each one's latency (warm untimed calls,
// before run ahead of every call), then, with tput, each one's throughput
// and CPU per call over tputFor. It returns fn's numbers and bwrap's.
func abPair(b *testing.B, bwrapFirst, tput bool, warm int, before, fn func() error, tputFor time.Duration, own *ownCPU) (e, a measured) {
	b.Helper()
	pair := []func(){
		func() { a.p50, a.p99 = latency(b, 5, nil, bwrapRun) },
		func() { e.p50, e.p99 = latency(b, warm, before, fn) },
	}
	if tput {
		pair = append(pair,
			func() { l := a; a = rateCPU(b, tputFor, background(b), own, bwrapRun); a.p50, a.p99 = l.p50, l.p99 },
			func() { l := e; e = rateCPU(b, tputFor, background(b), own, fn); e.p50, e.p99 = l.p50, l.p99 })
	}
	order := []int{0, 1, 2, 3}[:len(pair)]
	if !bwrapFirst {
		order = []int{1, 0, 3, 2}[:len(pair)]
	}
	for _, i := range order {
		pair[i]()
	}
	return e, a
}

// pluginFloor builds testdata/pluginfloor into dir and returns a run of
// it: a fork+exec+wait of a go-plugin gRPC plugin with the worker's
// protocol linked in, which runs every package's init and exits 1 at once
// (no handshake cookie), with GOMAXPROCS=1 as workers run. No sandbox
// can cost less than this under the design (one go-plugin plugin
// process per sandbox), so the table prints it as the floor.
func pluginFloor(b *testing.B, dir string) func() error {
	b.Helper()
	bin := filepath.Join(dir, "pluginfloor")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/execfarm/execfarm/test/bench/testdata/pluginfloor").CombinedOutput(); err != nil {
		b.Fatalf("build the plugin floor: %v\n%s", err, out)
	}
	env := append(os.Environ(), "GOMAXPROCS=1")
	return func() error {
		cmd := exec.Command(bin)
		cmd.Env = env
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return nil // go-plugin's "not meant to be executed directly"
		}
		if err == nil {
			err = errors.New("exited 0")
		}
		return fmt.Errorf("plugin floor: %w", err)
	}
}

// latency times samples sequential calls of fn after warm untimed ones.
func latency(b *testing.B, warm int, before, fn func() error) (p50, p99 time.Duration) {
	b.Helper()
	s := series{}
	for i := range samples + warm {
		if before != nil {
			if err := before(); err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		if i >= warm {
			s.d = append(s.d, time.Since(t0))
		}
	}
	return s.pct(0.5), s.pct(0.99)
}

func bwrapRun() error {
	if out, err := exec.Command(bwrapArgv[0], bwrapArgv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("bwrap: %w: %s", err, out)
	}
	return nil
}

// medianF returns the median of the rounds' values (the lower middle one
// for an even count).
func medianF(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// BenchmarkVersusBwrap prints the table of execfarm against bubblewrap:
// for no pool, a warm pool of 4 with a back-to-back client, the same pool
// refilled before each request, and a pool of 4 reused 1000 times, each
// for shell `true` and goja `console.log(1)`: Execute's p50 and p99 (one
// client), executions per second with 8 clients, and host-wide CPU per
// execution (/proc/stat, the host's background use measured just before
// and subtracted), each with its ratio to bwrap running /bin/true in the
// same round. Then, per warm sandbox of an idle full pool, the PSS of all
// its processes and their CPU use while nothing takes them.
func BenchmarkVersusBwrap(b *testing.B) {
	dir := binaries(b)
	if err := haveBwrap(); err != nil {
		b.Fatalf("the bwrap table needs bubblewrap: %v", err)
	}
	floorRun := pluginFloor(b, dir)
	own := newOwnCPU(b)
	defer own.close(b)
	rounds := envInt("EXECFARM_BENCH_ROUNDS", defaultRounds)
	tputFor := time.Duration(envInt("EXECFARM_BENCH_SECONDS", defaultSeconds)) * time.Second
	shell := func(s poolSetup, refill bool) peerRow {
		return peerRow{setup: s, refill: refill, rt: sandboxv1.Runtime_RUNTIME_SHELL, code: "true"}
	}
	goja := func(s poolSetup, refill bool) peerRow {
		return peerRow{setup: s, refill: refill, rt: sandboxv1.Runtime_RUNTIME_GOJA, code: "console.log(1)"}
	}
	pool0, pool4, reuse := poolSetup{0, 1}, poolSetup{4, 1}, poolSetup{4, 1000}
	setups := []poolSetup{pool0, pool4, reuse}
	if only := os.Getenv("EXECFARM_BENCH_SETUPS"); only != "" {
		names := map[string]poolSetup{"pool0": pool0, "pool4": pool4, "reuse": reuse}
		setups = nil
		for _, n := range strings.Split(only, ",") {
			s, ok := names[n]
			if !ok {
				b.Fatalf("EXECFARM_BENCH_SETUPS: unknown setup %q (want pool0, pool4, reuse)", n)
			}
			setups = append(setups, s)
		}
	}
	rows := map[poolSetup][]peerRow{
		pool0: {shell(pool0, false), goja(pool0, false)},
		pool4: {shell(pool4, false), shell(pool4, true), goja(pool4, false), goja(pool4, true)},
		reuse: {shell(reuse, false), goja(reuse, false)},
	}
	for range b.N {
		got := map[peerRow][]measured{}
		bw := map[peerRow][]measured{}
		var pss []pssSample
		var floor, floorBw []measured
		for round := range rounds {
			bwrapFirst := round%2 == 0
			e, a := abPair(b, bwrapFirst, true, 5, nil, floorRun, tputFor, own)
			floor, floorBw = append(floor, e), append(floorBw, a)
			for _, setup := range setups {
				client, stop := startEmbedded(b, dir, runtime.NumCPU(), setup, own.cgParent())
				for _, row := range rows[setup] {
					req := codeReq(row.rt, row.code)
					execute := func() error {
						resp, err := client.Execute(context.Background(), req)
						if err == nil && !resp.GetSuccess() {
							err = fmt.Errorf("%s: execution failed: %v", row, resp)
						}
						return err
					}
					var before func() error
					if row.refill {
						before = func() error { waitPoolFull(b, client, setup.size); return nil }
					}
					// Warm-up covers the pool's turnover: every sandbox
					// timed was started after the series' runtime was
					// first asked for.
					e, a := abPair(b, bwrapFirst, !row.refill, setup.size+5, before, execute, tputFor, own)
					got[row], bw[row] = append(got[row], e), append(bw[row], a)
					if setup == pool4 {
						// The pool is full again and was last asked for
						// this row's runtime.
						waitPoolFull(b, client, setup.size)
						pss = append(pss, warmSandboxes(b, row.rt, setup.size))
					}
				}
				stop()
			}
		}
		printPeerTable(b, rounds, tputFor, setups, rows, got, bw, floor, floorBw, pss)
	}
}

// pssSample is a full, idle warm pool as seen from the host: PSS and CPU
// per sandbox, and whether a goja process was prepared in them.
type pssSample struct {
	rt       sandboxv1.Runtime // the runtime the pool was last asked for
	pss      int64             // bytes per sandbox
	cpuPerS  time.Duration     // CPU per second per sandbox while idle
	procs    int               // processes per sandbox
	prepared int               // sandboxes holding a prepared runtime
}

// warmSandboxes reads the PSS (/proc/PID/smaps_rollup) of every process
// of the embedded supervisor's sandboxes (the fork server's descendants)
// and their CPU time over idleFor, per sandbox of a pool of size.
func warmSandboxes(b *testing.B, rt sandboxv1.Runtime, size int) pssSample {
	b.Helper()
	var fs int
	for _, p := range descendants(os.Getpid()) {
		if strings.Contains(p.cmdline, forkserver.Arg) {
			fs = p.pid
		}
	}
	if fs == 0 {
		b.Fatal("no fork server among the benchmark's children")
	}
	procs := descendants(fs)
	s := pssSample{rt: rt}
	cpu0 := map[int]time.Duration{}
	for _, p := range procs {
		s.pss += pssOf(b, p.pid)
		cpu0[p.pid] = cpuOf(p.pid)
		if filepath.Base(p.argv0) != "execfarm-worker" {
			s.prepared++ // a runtime process the worker holds
		}
	}
	t0 := time.Now()
	time.Sleep(idleFor) // a measurement window, not synchronisation
	var used time.Duration
	for _, p := range procs {
		used += cpuOf(p.pid) - cpu0[p.pid]
	}
	s.cpuPerS = time.Duration(float64(used) / time.Since(t0).Seconds() / float64(size))
	s.pss /= int64(size)
	s.procs = len(procs) / size
	return s
}

// pssOf returns the Pss line of /proc/PID/smaps_rollup, in bytes.
func pssOf(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatalf("read PSS: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatalf("no Pss in /proc/%d/smaps_rollup", pid)
	return 0
}

// cpuOf returns a process's user+system CPU time (all its threads), or 0
// when it is gone.
func cpuOf(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[end+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100
}

func printPeerTable(b *testing.B, rounds int, tputFor time.Duration, setups []poolSetup, rows map[poolSetup][]peerRow,
	got, bw map[peerRow][]measured, floor, floorBw []measured, pss []pssSample) {
	up, _ := exec.Command("uptime").Output()
	fmt.Printf("\nexecfarm vs bwrap --unshare-all /bin/true: medians of %d ABAB rounds (ratios: median of each round's ratio to bwrap's number)\n"+
		"p50/p99: one sequential client; per s: %d clients for %v; CPU/exec: host-wide (/proc/stat, background subtracted); own: the benchmark's processes and sandboxes (cpuacct)\n%s",
		rounds, clients, tputFor, up)
	cols := []struct {
		name string
		f    func(measured) float64
		unit func(float64) string
		tput bool // only with a throughput run
	}{
		{"p50", func(m measured) float64 { return float64(m.p50) }, msText, false},
		{"p99", func(m measured) float64 { return float64(m.p99) }, msText, false},
		{"per s", func(m measured) float64 { return m.perSec }, func(v float64) string { return fmt.Sprintf("%.0f", v) }, true},
		{"CPU/exec", func(m measured) float64 { return float64(m.cpu) }, msText, true},
		{"own CPU", func(m measured) float64 { return float64(m.own) }, msText, true},
	}
	fmt.Printf("%-42s", "series")
	for _, c := range cols {
		fmt.Printf(" %9s %6s", c.name, "/bwrap")
	}
	fmt.Println()
	line := func(name string, m, base []measured, tput bool) {
		fmt.Printf("%-42s", name)
		for _, c := range cols {
			if c.tput && !tput {
				fmt.Printf(" %9s %6s", "-", "")
				continue
			}
			var v, r []float64
			for i := range m {
				v = append(v, c.f(m[i]))
				if c.f(base[i]) > 0 {
					r = append(r, c.f(m[i])/c.f(base[i]))
				}
			}
			rs := "-"
			if len(r) > 0 {
				rs = fmt.Sprintf("%.2fx", medianF(r))
			}
			fmt.Printf(" %9s %6s", c.unit(medianF(v)), rs)
		}
		fmt.Println()
	}
	var all []measured
	for _, s := range setups {
		for _, row := range rows[s] {
			if !row.refill {
				all = append(all, bw[row]...)
			}
		}
	}
	line("bwrap /bin/true (every round of every row)", all, all, true)
	line("floor: a go-plugin plugin's exec, no sandbox", floor, floorBw, true)
	for _, s := range setups {
		for _, row := range rows[s] {
			line(row.String(), got[row], bw[row], !row.refill)
		}
	}
	// The floor and bwrap's own work (the namespaces, mounts and exec a
	// sandbox also needs) are each paid by every fresh sandbox.
	// A back-to-back client uses one fresh sandbox per execution, so on
	// average it waits at least that CPU over the host's cores for each.
	var least, wait []float64
	for i := range floor {
		if floorBw[i].own > 0 && floorBw[i].p50 > 0 {
			cpu := float64(floor[i].own + floorBw[i].own)
			least = append(least, cpu/float64(floorBw[i].own))
			wait = append(wait, cpu/float64(runtime.NumCPU())/float64(floorBw[i].p50))
		}
	}
	if len(least) > 0 {
		fmt.Printf("least own CPU of a fresh sandbox under the design (floor + bwrap's own work): %.2fx bwrap's; "+
			"least mean latency of a back-to-back client on %d cores (that CPU / cores): %.2fx bwrap's p50\n",
			medianF(least), runtime.NumCPU(), medianF(wait))
	}
	fmt.Printf("\nwarm sandbox of an idle full pool of 4 (after a series of the runtime named)\n%-16s %10s %16s %10s %10s\n",
		"last asked for", "PSS", "CPU while idle", "processes", "prepared")
	for _, s := range pss {
		fmt.Printf("%-16s %10s %13.3f ms/s %10d %8d/4\n", strings.TrimPrefix(s.rt.String(), "RUNTIME_"), mib(s.pss), float64(s.cpuPerS)/1e6, s.procs, s.prepared)
	}
}

func msText(v float64) string { return fmt.Sprintf("%.2f ms", v/1e6) }

// ownCPU accounts the CPU time of the benchmark's own processes: the
// benchmark process (its client goroutines and the embedded supervisor),
// the fork server, bwrap and, since the sandboxes' cgroup parent (parent)
// is nested under it, every sandbox: one cgroup v1 cpuacct group that
// they all run in. Kernel threads working for them (RCU, the
// destruction of namespaces and cgroups) are not in it: the host-wide
// column counts those, but with the rest of a busy host's noise.
type ownCPU struct {
	dir, back string // the cpuacct group; the one the process came from
	parent    string // the sandboxes' cgroup parent (nested under dir)
}

// newOwnCPU moves the benchmark process and its fork server, if one runs,
// into a cpuacct group of their own. It returns nil without cgroup v1's
// cpuacct (the own-CPU column is then left out).
func newOwnCPU(b *testing.B) *ownCPU {
	b.Helper()
	const root = "/sys/fs/cgroup/cpuacct"
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		b.Fatal(err)
	}
	back := ""
	for _, l := range strings.Split(string(self), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "cpuacct") {
			back = root + f[2]
		}
	}
	if back == "" {
		return nil
	}
	name := fmt.Sprintf("execfarm-bench-cpu-%d", os.Getpid())
	o := &ownCPU{dir: filepath.Join(back, name), back: back, parent: fmt.Sprintf("/execfarm-bench-peers-%d", os.Getpid())}
	if err := os.Mkdir(o.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	o.move(b, o.dir)
	return o
}

// move moves the benchmark process and its fork server into dir.
func (o *ownCPU) move(b *testing.B, dir string) {
	b.Helper()
	pids := []int{os.Getpid()}
	for _, p := range descendants(os.Getpid()) {
		if strings.Contains(p.cmdline, forkserver.Arg) {
			pids = append(pids, p.pid)
		}
	}
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			b.Fatalf("move %d to %s: %v", pid, dir, err)
		}
	}
}

// used returns the group's CPU time so far.
func (o *ownCPU) used(b *testing.B) time.Duration {
	if o == nil {
		return 0
	}
	v, err := os.ReadFile(filepath.Join(o.dir, "cpuacct.usage"))
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(n)
}

// cgParent is the sandboxes' cgroup parent that nests them in the
// group, "" (the default) without one.
func (o *ownCPU) cgParent() string {
	if o == nil {
		return ""
	}
	return o.parent
}

// close moves the processes back and removes the group.
func (o *ownCPU) close(b *testing.B) {
	if o == nil {
		return
	}
	o.move(b, o.back)
	// And what they started there since (the supervisor's transform
	// helpers), which a group must not hold to be removed.
	procs, err := os.ReadFile(filepath.Join(o.dir, "cgroup.procs"))
	if err != nil {
		b.Errorf("list %s: %v", o.dir, err)
	}
	for _, pid := range strings.Fields(string(procs)) {
		if err := os.WriteFile(filepath.Join(o.back, "cgroup.procs"), []byte(pid), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			b.Errorf("move %s back to %s: %v", pid, o.back, err)
		}
	}
	if err := os.Remove(o.dir); err != nil {
		b.Errorf("remove %s: %v", o.dir, err)
	}
}
