package cgroup

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// kernelFiles are the interface files a v2 kernel creates in a new cgroup
// with memory, cpu and pids enabled, with their initial contents.
func kernelFiles() map[string]string {
	return map[string]string{
		"cgroup.controllers":     "cpu memory pids\n",
		"cgroup.subtree_control": "",
		"cgroup.procs":           "",
		"cgroup.kill":            "",
		"cgroup.freeze":          "0\n",
		"cgroup.events":          "populated 0\nfrozen 0\n",
		"memory.max":             "max\n",
		"memory.swap.max":        "max\n",
		"memory.oom.group":       "0\n",
		"memory.peak":            "0\n",
		"memory.current":         "0\n",
		"memory.events":          "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
		"pids.max":               "max\n",
		"pids.peak":              "0\n",
		"pids.current":           "0\n",
		"cpu.max":                "max 100000\n",
		"cpu.weight":             "100\n",
		"cpu.stat":               "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
	}
}

// fakeV2 builds a fake v2 hierarchy in a temp dir: the root and Parent
// /execfarm, and a Config whose new cgroups get the files of files (which
// a test may trim to play an older kernel).
func fakeV2(t *testing.T, files map[string]string) Config {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{root, filepath.Join(root, "execfarm")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFakeFiles(t, dir, map[string]string{
			"cgroup.controllers":     "cpu memory pids\n",
			"cgroup.subtree_control": "",
			"cgroup.procs":           "",
		})
	}
	return Config{
		Mode: V2, Root: root, Parent: "/execfarm", AbsoluteParent: true,
		afterMkdir: func(dir string) error {
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func writeFakeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func without(files map[string]string, names ...string) map[string]string {
	out := maps.Clone(files)
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func TestFakeV2NewWritesLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l     Limits
		files map[string]string // file -> wanted content
	}{
		{"no limits", Limits{}, map[string]string{
			"memory.max": "max", "memory.swap.max": "0", "memory.oom.group": "1",
			"pids.max": "max", "cpu.max": "max 100000",
		}},
		{"all limits", Limits{MemoryMaxBytes: 64 << 20, PidsMax: 100, CPUQuotaMicros: 150000}, map[string]string{
			"memory.max": "67108864", "memory.swap.max": "0", "memory.oom.group": "1",
			"pids.max": "100", "cpu.max": "150000 100000",
		}},
		{"custom period", Limits{CPUQuotaMicros: 5000, CPUPeriodMicros: 10000}, map[string]string{
			"cpu.max": "5000 10000", "cpu.weight": "100",
		}},
		{"background weight", Limits{CPUWeight: BackgroundCPUWeight}, map[string]string{
			"cpu.weight": "10",
		}},
		{"no OOM group (a session)", Limits{MemoryMaxBytes: 64 << 20, NoOOMGroup: true}, map[string]string{
			"memory.max": "67108864", "memory.oom.group": "0",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeV2(t, kernelFiles())
			m, err := New(cfg, "sbx", tc.l)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if want := filepath.Join(cfg.Root, "execfarm", "sbx"); m.Path() != want {
				t.Errorf("Path() = %q, want %q", m.Path(), want)
			}
			for name, want := range tc.files {
				if got := readTrim(t, filepath.Join(m.Path(), name)); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			for _, dir := range []string{cfg.Root, filepath.Join(cfg.Root, "execfarm")} {
				got := readTrim(t, filepath.Join(dir, "cgroup.subtree_control"))
				for _, c := range v2Controllers {
					if !strings.Contains(got, "+"+c) {
						t.Errorf("%s/cgroup.subtree_control = %q, want +%s", dir, got, c)
					}
				}
			}
			if w := m.Warnings(); len(w) != 0 {
				t.Errorf("Warnings() = %v, want none", w)
			}
			if fi, err := os.Stat(filepath.Join(m.Path(), WorkerLeafName)); err != nil || !fi.IsDir() {
				t.Errorf("worker leaf: %v", err)
			}
			if err := m.Delete(); err != nil || exists(m.Path()) {
				t.Errorf("Delete = %v; cgroup left: %v", err, exists(m.Path()))
			}
		})
	}
}

func TestFakeV2NewOlderKernels(t *testing.T) {
	t.Run("no memory.swap.max", func(t *testing.T) {
		cfg := fakeV2(t, without(kernelFiles(), "memory.swap.max"))
		m, err := New(cfg, "sbx", Limits{MemoryMaxBytes: 1 << 30})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if exists(filepath.Join(m.Path(), "memory.swap.max")) {
			t.Error("memory.swap.max was created")
		}
		if w := m.Warnings(); len(w) != 1 || !strings.Contains(w[0], "memory.swap.max") {
			t.Errorf("Warnings() = %v, want one about memory.swap.max", w)
		}
	})
	t.Run("no memory.oom.group", func(t *testing.T) {
		cfg := fakeV2(t, without(kernelFiles(), "memory.oom.group"))
		_, err := New(cfg, "sbx", Limits{})
		if !errors.Is(err, ErrControllerMissing) {
			t.Fatalf("New = %v, want ErrControllerMissing", err)
		}
		if exists(filepath.Join(cfg.Root, "execfarm", "sbx")) {
			t.Error("failed New left its cgroup behind")
		}
	})
}

func TestFakeV2NewRejects(t *testing.T) {
	cfg := fakeV2(t, kernelFiles())
	for _, tc := range []struct {
		name string
		cg   string
		l    Limits
		want error
	}{
		{"bad name", "../x", Limits{}, ErrInvalidName},
		{"bad limits", "ok", Limits{PidsMax: -2}, ErrInvalidLimits},
		{"no mode", "ok", Limits{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil {
				return
			}
			if _, err := New(cfg, tc.cg, tc.l); !errors.Is(err, tc.want) {
				t.Fatalf("New = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := New(Config{Mode: Mode(7), Root: cfg.Root}, "x", Limits{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("New with mode 7 = %v, want ErrUnavailable", err)
	}
	m, err := New(cfg, "dup", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, "dup", Limits{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("New of an existing cgroup = %v, want ErrExist", err)
	}
	if err := m.Delete(); err != nil {
		t.Fatal(err)
	}
}

func TestFakeV2Usage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		sample map[string]string // pids.current / memory.current during Sample
		want   Usage
	}{
		{
			name: "modern kernel",
			files: map[string]string{
				"cpu.stat":      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n",
				"memory.peak":   "52428800\n",
				"memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 1\n",
				"pids.peak":     "7\n",
			},
			want: Usage{CPUUserMicros: 1000, CPUSystemMicros: 500, PeakMemoryBytes: 52428800,
				PeakMemorySource: PeakSourcePeak, PidsPeak: 7, OOMKills: 1, LimitOOMs: 1, LimitOOMsRead: true, Source: "cgroup v2"},
		},
		{
			// An OOM kill for an ancestor's limit: oom_kill counts the
			// victim, oom stays 0 (the limit hit was not the sandbox's).
			name: "OOM kill from an ancestor's limit",
			files: map[string]string{
				"cpu.stat":      "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
				"memory.peak":   "1048576\n",
				"memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\noom_group_kill 0\n",
				"pids.peak":     "2\n",
			},
			want: Usage{PeakMemoryBytes: 1048576, PeakMemorySource: PeakSourcePeak, PidsPeak: 2, OOMKills: 1,
				LimitOOMsRead: true, Source: "cgroup v2"},
		},
		{
			name:   "no memory.peak, no pids.peak: sampled",
			files:  map[string]string{"memory.current": "4096\n", "pids.current": "0\n"},
			sample: map[string]string{"memory.current": "8192\n", "pids.current": "12\n"},
			want: Usage{PeakMemoryBytes: 8192, PeakMemorySource: PeakSourceCurrent, PidsPeak: 12,
				LimitOOMsRead: true, Source: "cgroup v2"},
		},
		{
			name:  "no memory.peak, no pids.peak: current above samples",
			files: map[string]string{"memory.current": "65536\n", "pids.current": "3\n"},
			want: Usage{PeakMemoryBytes: 65536, PeakMemorySource: PeakSourceCurrent, PidsPeak: 3,
				LimitOOMsRead: true, Source: "cgroup v2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := kernelFiles()
			if tc.sample != nil || tc.want.PeakMemorySource == PeakSourceCurrent {
				files = without(files, "memory.peak", "pids.peak")
			}
			m, err := New(fakeV2(t, files), "sbx", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.sample != nil {
				writeFakeFiles(t, m.Path(), tc.sample)
				m.Sample()
			}
			writeFakeFiles(t, m.Path(), tc.files)
			got, err := m.Usage()
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			if got != tc.want {
				t.Errorf("Usage() = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
	// A reused sandbox: memory.peak and pids.peak still hold the earlier
	// execution's peaks, which ResetPeaks cannot clear; Usage then reports
	// what Sample saw since.
	t.Run("after ResetPeaks", func(t *testing.T) {
		m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		writeFakeFiles(t, m.Path(), map[string]string{"memory.peak": "536870912\n", "pids.peak": "200\n",
			"memory.current": "1048576\n", "pids.current": "9\n"})
		m.Sample()
		if err := m.ResetPeaks(); err != nil {
			t.Fatal(err)
		}
		writeFakeFiles(t, m.Path(), map[string]string{"memory.current": "2097152\n", "pids.current": "4\n"})
		m.Sample()
		writeFakeFiles(t, m.Path(), map[string]string{"memory.current": "4096\n", "pids.current": "1\n"})
		got, err := m.Usage()
		if err != nil {
			t.Fatal(err)
		}
		if got.PeakMemoryBytes != 2097152 || got.PeakMemorySource != PeakSourceCurrent || got.PidsPeak != 4 {
			t.Errorf("after reset: peak memory %d (%s), pids peak %d; want 2097152 (%s), 4",
				got.PeakMemoryBytes, got.PeakMemorySource, got.PidsPeak, PeakSourceCurrent)
		}
	})
	t.Run("malformed cpu.stat", func(t *testing.T) {
		m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		writeFakeFiles(t, m.Path(), map[string]string{"cpu.stat": "user_usec lots\n"})
		if _, err := m.Usage(); !errors.Is(err, ErrMalformed) {
			t.Errorf("Usage() = %v, want ErrMalformed", err)
		}
	})
}

func TestFakeV2OOMKilled(t *testing.T) {
	for _, tc := range []struct {
		events string
		want   bool
	}{
		{"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", false},
		{"low 0\nhigh 0\nmax 9\noom 1\noom_kill 0\n", false}, // hit the limit, reclaimed, nobody killed
		{"low 0\nhigh 0\nmax 9\noom 1\noom_kill 2\noom_group_kill 1\n", true},
	} {
		m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		writeFakeFiles(t, m.Path(), map[string]string{"memory.events": tc.events})
		if got, err := m.OOMKilled(); err != nil || got != tc.want {
			t.Errorf("OOMKilled() with %q = %v, %v; want %v", tc.events, got, err, tc.want)
		}
	}
}

func TestFakeV2Kill(t *testing.T) {
	t.Run("cgroup.kill", func(t *testing.T) {
		m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if got := readTrim(t, filepath.Join(m.Path(), "cgroup.kill")); got != "1" {
			t.Errorf("cgroup.kill = %q, want 1", got)
		}
		if got := readTrim(t, filepath.Join(m.Path(), "cgroup.freeze")); got != "0" {
			t.Errorf("cgroup.freeze = %q, want 0 (not used with cgroup.kill)", got)
		}
	})
	t.Run("no cgroup.kill: freeze and thaw", func(t *testing.T) {
		files := without(kernelFiles(), "cgroup.kill")
		files["cgroup.events"] = "populated 0\nfrozen 1\n" // the fake freezes at once
		m, err := New(fakeV2(t, files), "sbx", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if exists(filepath.Join(m.Path(), "cgroup.kill")) {
			t.Error("Kill created cgroup.kill")
		}
		if got := readTrim(t, filepath.Join(m.Path(), "cgroup.freeze")); got != "0" {
			t.Errorf("cgroup.freeze = %q after Kill, want 0 (thawed)", got)
		}
	})
}

// TestFakeV2DeleteWaitsPastKillTimeout: a killed process that takes longer
// than Kill's bound to exit (one holding tens of thousands of mapped files
// takes minutes under an emulated CPU) does not make Delete give up: it
// waits for cgroup.procs to empty up to its own bound, then removes the
// cgroup. Kill alone still gives up at its bound.
func TestFakeV2DeleteWaitsPastKillTimeout(t *testing.T) {
	defer func(d time.Duration) { killTimeout = d }(killTimeout)
	killTimeout = 20 * time.Millisecond
	m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	procs := filepath.Join(m.Path(), "cgroup.procs")
	writeFakeFiles(t, m.Path(), map[string]string{"cgroup.procs": "4194304\n"}) // above pid_max: nothing real
	if err := m.Kill(); !errors.Is(err, ErrKillTimeout) {
		t.Fatalf("Kill with a process that stays = %v, want ErrKillTimeout", err)
	}
	exit := 10 * killTimeout
	start := time.Now()
	time.AfterFunc(exit, func() { _ = os.WriteFile(procs, nil, 0o644) }) // the process exits
	if err := m.Delete(); err != nil {
		t.Fatalf("Delete = %v, want the wait to outlast Kill's bound", err)
	}
	if took := time.Since(start); took < exit {
		t.Errorf("Delete returned after %v, before the process exited (%v)", took, exit)
	}
	if exists(m.Path()) {
		t.Error("Delete left the cgroup")
	}
}

func TestFakeV2DeleteAndCleanup(t *testing.T) {
	cfg := fakeV2(t, kernelFiles())
	m, err := New(cfg, "a", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if exists(m.Path()) {
		t.Error("Delete left the cgroup")
	}
	if err := m.Delete(); err != nil {
		t.Errorf("second Delete = %v", err)
	}
	if err := m.Kill(); err != nil {
		t.Errorf("Kill after Delete = %v", err)
	}
	for _, n := range []string{"left1", "left2"} {
		if _, err := New(cfg, n, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	// A nested cgroup the sandbox made must go too.
	nested := filepath.Join(cfg.Root, "execfarm", "left1", "child")
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeFiles(t, nested, map[string]string{"cgroup.procs": ""})
	n, err := Cleanup(cfg)
	if err != nil || n != 2 {
		t.Fatalf("Cleanup() = %d, %v; want 2, nil", n, err)
	}
	entries, _ := os.ReadDir(filepath.Join(cfg.Root, "execfarm"))
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("Cleanup left %s", e.Name())
		}
	}
	if n, err := Cleanup(cfg); err != nil || n != 0 {
		t.Errorf("second Cleanup() = %d, %v; want 0, nil", n, err)
	}
}

func TestFakeV2FD(t *testing.T) {
	m, err := New(fakeV2(t, kernelFiles()), "sbx", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.FD()
	if err != nil {
		t.Fatalf("FD: %v", err)
	}
	defer f.Close()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_PATH == 0 {
		t.Errorf("fd flags %#x lack O_PATH", flags)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("fd is not a directory: %v", err)
	}
	if err := m.AddProc(0); err == nil {
		t.Error("AddProc(0) = nil, want an error")
	}
	if err := m.AddProc(4242); err != nil {
		t.Fatalf("AddProc: %v", err)
	}
	leaf := filepath.Join(m.Path(), WorkerLeafName)
	if got := readTrim(t, filepath.Join(leaf, "cgroup.procs")); got != "4242" {
		t.Errorf("%s/cgroup.procs = %q, want 4242: AddProc places in the worker leaf", WorkerLeafName, got)
	}
	if got := readTrim(t, filepath.Join(m.Path(), "cgroup.procs")); got != "" {
		t.Errorf("sandbox cgroup.procs = %q, want none: v2 sandbox cgroups hold no process", got)
	}
	var st2 unix.Stat_t
	if err := unix.Stat(leaf, &st2); err != nil || st.Ino != st2.Ino {
		t.Errorf("FD is not the worker leaf %s (inode %d, %d: %v)", leaf, st.Ino, st2.Ino, err)
	}
	writeFakeFiles(t, leaf, map[string]string{"cgroup.procs": ""}) // let Delete's kill finish
}

func TestFakeV2Probe(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rootCtrls  string
		files      map[string]string
		missing    []string
		warnSubstr string
	}{
		{"complete", "cpu memory pids", kernelFiles(), nil, ""},
		{"no pids on host", "cpu memory", kernelFiles(), []string{"pids"}, ""},
		{"no oom.group", "cpu memory pids", without(kernelFiles(), "memory.oom.group"), []string{"memory"}, ""},
		{"old kernel", "cpu memory pids", without(kernelFiles(), "memory.peak", "pids.peak", "cgroup.kill"), nil, "memory.peak is absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeV2(t, tc.files)
			cfg.Parent = "/execfarm/new" // does not exist yet: Probe creates and removes it
			writeFakeFiles(t, filepath.Join(cfg.Root, "execfarm"), map[string]string{"cgroup.controllers": tc.rootCtrls})
			r := Probe(cfg)
			if r.Err != nil {
				t.Fatalf("Probe: %v", r.Err)
			}
			if got := r.Missing(); !slices.Equal(got, tc.missing) {
				t.Errorf("Missing() = %v, want %v (%+v)", got, tc.missing, r.Controllers)
			}
			if tc.warnSubstr != "" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, tc.warnSubstr) }) {
				t.Errorf("Warnings() = %v, want one containing %q", r.Warnings, tc.warnSubstr)
			}
			if exists(filepath.Join(cfg.Root, "execfarm", "new")) {
				t.Error("Probe left the parent it created")
			}
		})
	}
}

// TestFakeV2SetCPUWeight: the weight is cpu.weight itself on v2.
func TestFakeV2SetCPUWeight(t *testing.T) {
	cfg := fakeV2(t, kernelFiles())
	m, err := New(cfg, "sbx", Limits{CPUWeight: BackgroundCPUWeight})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetCPUWeight(DefaultCPUWeight); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(m.Path(), "cpu.weight")); got != "100" {
		t.Errorf("cpu.weight = %q, want 100", got)
	}
	for _, bad := range []uint64{0, 10001} {
		if err := m.SetCPUWeight(bad); !errors.Is(err, ErrInvalidLimits) {
			t.Errorf("SetCPUWeight(%d) = %v, want ErrInvalidLimits", bad, err)
		}
	}
	if _, err := New(cfg, "heavy", Limits{CPUWeight: 10001}); !errors.Is(err, ErrInvalidLimits) {
		t.Errorf("New with CPUWeight 10001 = %v, want ErrInvalidLimits", err)
	}
}
