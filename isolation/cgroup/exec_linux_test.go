package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRealExecCPU: an exec's cgroup counts the CPU time of the processes
// placed through NewExec's files, and only theirs (a sibling exec's stays
// 0); on v1 with cpuacct apart from pids that takes a second cgroup in the
// cpuacct hierarchy, which Remove removes too.
func TestRealExecCPU(t *testing.T) {
	cfg := requireCgroup(t)
	m, err := New(cfg, "execcpu", Limits{PidsMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Delete()
	procs, err := m.NewPayload(16)
	if err != nil {
		t.Fatal(err)
	}
	procs.Close()
	e, files, err := m.NewExec("x1", false)
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	apart := m.Mode() == V1 && m.Paths()["cpuacct"] != m.Paths()["pids"]
	if want := map[bool]int{true: 2, false: 1}[apart]; len(files) != want {
		t.Fatalf("NewExec gave %d files, want %d (v1 with cpuacct apart: %v)", len(files), want, apart)
	}
	idle, idleFiles, err := m.NewExec("x2", false)
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	for _, f := range idleFiles {
		f.Close()
	}

	cmd := exec.Command("sh", "-c", `read -r _; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := f.WriteString(strconv.Itoa(cmd.Process.Pid)); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("place the process through %s: %v", f.Name(), err)
		}
	}
	// The shell's start, before the move, is not the cgroup's: what it
	// had used when placed (in ticks of 10 ms; tens of ms under qemu's
	// TCG, in the cgroup v2 VM) is subtracted.
	before := ticksUsed(t, cmd.Process.Pid) * 10_000
	in.Close() // the loop starts in the exec's cgroups
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ran := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()
	user, sys, err := e.CPU()
	if err != nil {
		t.Fatalf("CPU: %v", err)
	}
	// Tick granularity on both sides, and 20 ms of slack.
	if got := user + sys; got < ran-before-40_000 || got > ran+20_000 {
		t.Fatalf("exec cgroup's CPU time %d µs (user %d), the process used %d µs, %d of them before it was placed", got, user, ran, before)
	}
	if user, sys, err := idle.CPU(); err != nil || user+sys != 0 {
		t.Fatalf("CPU of an exec with no process: %d+%d µs, %v; want 0", user, sys, err)
	}
	if err := e.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, d := range []string{e.dir, filepath.Join(m.Paths()["cpuacct"], "x1")} {
		if _, err := os.Stat(d); !os.IsNotExist(err) && (apart || d == e.dir) {
			t.Errorf("%s left after Remove: %v", d, err)
		}
	}
	if err := idle.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}

// ticksUsed returns the user and system CPU time of process pid so far,
// in clock ticks (fields 14 and 15 of /proc/PID/stat; the comm field of
// a shell has no space).
func ticksUsed(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	u, err1 := strconv.ParseInt(f[13], 10, 64)
	s, err2 := strconv.ParseInt(f[14], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return u + s
}

// TestExecCPUFiles: Exec.CPU reads cpu.stat of the exec's cgroup on v2
// and its cpuacct cgroup on v1 (the precise total split by the sampled
// ratio; cpuacct.stat in ticks on old kernels), in fake trees.
func TestExecCPUFiles(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v1        bool
		files     map[string]string
		user, sys int64
	}{
		{name: "v2 cpu.stat", files: map[string]string{"cpu.stat": "usage_usec 3500\nuser_usec 3000\nsystem_usec 500\n"}, user: 3000, sys: 500},
		{name: "v1 cpuacct", v1: true, files: map[string]string{
			"cpuacct.usage": "4000000\n", "cpuacct.usage_user": "3000000\n", "cpuacct.usage_sys": "1000000\n",
		}, user: 3000, sys: 1000},
		{name: "v1 cpuacct.stat", v1: true, files: map[string]string{"cpuacct.stat": "user 7\nsystem 2\n"}, user: 70000, sys: 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cpuDir := t.TempDir(), t.TempDir()
			e := &Exec{dir: dir}
			at := dir
			if tc.v1 {
				e.cpuDir, at = cpuDir, cpuDir
			}
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(at, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			user, sys, err := e.CPU()
			if err != nil || user != tc.user || sys != tc.sys {
				t.Fatalf("CPU() = %d, %d, %v; want %d, %d", user, sys, err, tc.user, tc.sys)
			}
		})
	}
}
