package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// requireUnifiedMount returns a cgroup2 mount to run real v2 kill and fd
// tests in, even on a hybrid host whose unified mount has no controllers:
// cgroup.kill, cgroup.freeze and CLONE_INTO_CGROUP are core features.
func requireUnifiedMount(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if exists(filepath.Join(p, "cgroup.procs")) && isCgroupFS(p) && exists(filepath.Join(p, "cgroup.subtree_control")) {
			return p
		}
	}
	t.Skip("no cgroup2 mount")
	return ""
}

// bareV2 makes a v2 sandbox cgroup and its worker leaf without
// controllers (so without New's limits) on the real unified mount, removed
// at cleanup.
func bareV2(t *testing.T, name string) *Manager {
	t.Helper()
	root := requireUnifiedMount(t)
	lay := layout{mode: V2, root: root, parents: map[string]string{unified: fmt.Sprintf("/execfarm-test-%d", os.Getpid())}}
	created, err := lay.mkdirParents(lay.parentDir(unified))
	if err != nil {
		t.Fatal(err)
	}
	m := load(lay, name)
	for _, d := range []string{m.Path(), filepath.Join(m.Path(), WorkerLeafName)} {
		if err := lay.mkdir(d); err != nil {
			t.Fatalf("mkdir in %s: %v", root, err)
		}
	}
	t.Cleanup(func() {
		if err := m.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
		for _, d := range created {
			if err := removeTree(d); err != nil {
				t.Errorf("remove parent: %v", err)
			}
		}
	})
	return m
}

func TestUnifiedFDAndKill(t *testing.T) {
	m := bareV2(t, "fdkill")
	if !exists(filepath.Join(m.Path(), "cgroup.kill")) {
		t.Skip("kernel has no cgroup.kill (Linux < 5.14)")
	}
	f, err := m.FD()
	if err != nil {
		t.Fatalf("FD: %v", err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	err = cmd.Start()
	f.Close()
	if err != nil {
		t.Fatalf("start with UseCgroupFD (O_PATH fd): %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	if procs, _ := m.procs(); !slices.Equal(procs, []int{cmd.Process.Pid}) {
		t.Fatalf("cgroup.procs = %v, want [%d]: child not born in the cgroup", procs, cmd.Process.Pid)
	}
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	wantSIGKILL(t, cmd.Wait())
}

// TestUnifiedFreezeKill runs the pre-5.14 path (freeze, signal, thaw) on a
// real kernel.
func TestUnifiedFreezeKill(t *testing.T) {
	m := bareV2(t, "freezekill")
	if !exists(filepath.Join(m.Path(), "cgroup.freeze")) {
		t.Skip("kernel has no cgroup.freeze (Linux < 5.2)")
	}
	cmd := startSleep(t)
	if err := m.AddProc(cmd.Process.Pid); err == nil {
		t.Fatal("AddProc on a Manager not made by New succeeded")
	}
	if err := writeExisting(filepath.Join(m.Path(), WorkerLeafName, "cgroup.procs"), fmt.Sprint(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	frozen, err := m.freezeKillThaw()
	if err != nil || !frozen {
		t.Fatalf("freezeKillThaw() = %v, %v; want frozen", frozen, err)
	}
	wantSIGKILL(t, cmd.Wait())
	if got := readTrim(t, filepath.Join(m.Path(), "cgroup.freeze")); got != "0" {
		t.Errorf("cgroup.freeze = %q after kill, want 0", got)
	}
}

func TestUnifiedProbe(t *testing.T) {
	root := requireUnifiedMount(t)
	cfg := Config{Mode: V2, Root: root, AbsoluteParent: true, Parent: fmt.Sprintf("/execfarm-probe-%d", os.Getpid())}
	r := Probe(cfg)
	if r.Err != nil {
		t.Fatalf("Probe: %v", r.Err)
	}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Controllers {
		if listed := slices.Contains(bytesFields(b), c.Name); c.Available != listed {
			t.Errorf("%s: Available = %v, but listed in root cgroup.controllers = %v", c.Name, c.Available, listed)
		}
	}
	if exists(filepath.Join(root, cfg.Parent)) {
		t.Errorf("Probe left %s", cfg.Parent)
	}
	t.Logf("probe of %s: %+v", root, r)
}

func bytesFields(b []byte) []string { return strings.Fields(string(b)) }
