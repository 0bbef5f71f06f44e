package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRealPayload: a process moved through the payload's procs file is in
// the payload, which has its own pids.max; Delete removes the payload too.
func TestRealPayload(t *testing.T) {
	cfg := requireCgroup(t)
	m, err := New(cfg, "payload", Limits{PidsMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Delete()
	procs, err := m.NewPayload(8)
	if err != nil {
		t.Fatalf("NewPayload: %v", err)
	}
	defer procs.Close()
	dir := filepath.Join(m.Paths()["pids"], PayloadName)
	if m.Mode() == V2 {
		dir = filepath.Join(m.Path(), PayloadName)
	}
	if got := readTrim(t, filepath.Join(dir, "pids.max")); got != "8" {
		t.Fatalf("payload pids.max = %q, want 8", got)
	}
	cmd := startSleep(t)
	if err := m.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := procs.WriteString(strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatalf("write payload procs: %v", err)
	}
	got, err := readProcsTree(dir)
	if err != nil || !slices.Contains(got, cmd.Process.Pid) {
		t.Fatalf("payload procs = %v, %v; want %d", got, err, cmd.Process.Pid)
	}
	if err := m.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	wantSIGKILL(t, cmd.Wait())
	if err := m.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("payload %s left after Delete: %v", dir, err)
	}
	if _, err := m.NewPayload(0); err == nil {
		t.Fatal("NewPayload(0) accepted")
	}
}

func TestFakeV2Payload(t *testing.T) {
	cfg := fakeV2(t, kernelFiles())
	m, err := New(cfg, "sbx", Limits{PidsMax: 100})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.NewPayload(64)
	if err != nil {
		t.Fatalf("NewPayload: %v", err)
	}
	defer f.Close()
	if got := readTrim(t, filepath.Join(m.Path(), "cgroup.subtree_control")); !strings.Contains(got, "+pids") {
		t.Errorf("sandbox subtree_control = %q, want +pids", got)
	}
	if got := readTrim(t, filepath.Join(m.Path(), PayloadName, "pids.max")); got != "64" {
		t.Errorf("payload pids.max = %q, want 64", got)
	}
	if f.Name() != filepath.Join(m.Path(), PayloadName, "cgroup.procs") {
		t.Errorf("procs file = %s", f.Name())
	}
}
