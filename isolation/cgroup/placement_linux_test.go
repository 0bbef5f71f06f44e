package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCgroup makes the directory of cgroup g under root with the given
// files.
func fakeCgroup(t *testing.T, root, g string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, g)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeFiles(t, dir, files)
	return dir
}

// delegatedFiles are a cgroup's files when its parent delegates memory,
// cpu and pids to it, holding procs.
func delegatedFiles(procs string) map[string]string {
	return map[string]string{
		"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "",
		"cgroup.type": "domain\n", "cgroup.procs": procs,
	}
}

func TestPlaceAt(t *testing.T) {
	const pid = 4242
	t.Run("real root: no move", func(t *testing.T) {
		root := t.TempDir()
		writeFakeFiles(t, root, map[string]string{"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "", "cgroup.procs": "1\n4242\n"})
		p, err := placeAt(root, "/", pid, false)
		if err != nil || p != (Placement{Own: "/", Leaf: "/", Done: true}) {
			t.Fatalf("placeAt = %+v, %v; want the root, done", p, err)
		}
		if exists(filepath.Join(root, SupervisorLeafName)) {
			t.Error("a leaf was made in the real root")
		}
	})
	for _, own := range []string{"/system.slice/execfarm.service", "/"} {
		// "/" with cgroup.type: the root of a cgroup namespace (a pod).
		t.Run("moves every process of "+own, func(t *testing.T) {
			root := t.TempDir()
			dir := fakeCgroup(t, root, own, delegatedFiles("1\n4242\n"))
			p, err := placeAt(root, own, pid, false)
			if err != nil {
				t.Fatal(err)
			}
			leaf := filepath.Join(own, SupervisorLeafName)
			if p.Own != own || p.Leaf != leaf || !p.Done || p.Moved != 2 {
				t.Errorf("placeAt = %+v; want own %s, leaf %s, 2 moved, done", p, own, leaf)
			}
			if got := readTrim(t, filepath.Join(root, leaf, "cgroup.procs")); got != "4242" {
				t.Errorf("leaf cgroup.procs = %q, want the last pid written (4242)", got)
			}
			if got := readTrim(t, filepath.Join(dir, "cgroup.subtree_control")); got != "+memory +cpu +pids" {
				t.Errorf("cgroup.subtree_control = %q, want +memory +cpu +pids", got)
			}
		})
	}
	t.Run("already in the leaf of a prepared cgroup", func(t *testing.T) {
		root := t.TempDir()
		fakeCgroup(t, root, "/svc", map[string]string{"cgroup.procs": "", "cgroup.subtree_control": "cpu memory pids\n", "cgroup.controllers": "cpu memory pids\n"})
		fakeCgroup(t, root, "/svc/supervisor", map[string]string{"cgroup.procs": "4242\n"})
		p, err := placeAt(root, "/svc/supervisor", pid, false)
		if err != nil || p != (Placement{Own: "/svc", Leaf: "/svc/supervisor", Done: true}) {
			t.Fatalf("placeAt = %+v, %v; want own /svc, done, nothing moved", p, err)
		}
	})
	t.Run("a leaf named supervisor whose parent is not prepared is its own cgroup", func(t *testing.T) {
		root := t.TempDir()
		fakeCgroup(t, root, "/a", delegatedFiles("7\n"))
		fakeCgroup(t, root, "/a/supervisor", delegatedFiles("4242\n"))
		p, err := placeAt(root, "/a/supervisor", pid, false)
		if err != nil || p.Own != "/a/supervisor" || !p.Done {
			t.Fatalf("placeAt = %+v, %v; want own /a/supervisor", p, err)
		}
	})
	t.Run("NoPlace reports and changes nothing", func(t *testing.T) {
		root := t.TempDir()
		dir := fakeCgroup(t, root, "/svc", delegatedFiles("1\n4242\n9\n"))
		p, err := placeAt(root, "/svc", pid, true)
		if err != nil || p.Done || p.Moved != 3 || p.Leaf != "/svc/supervisor" {
			t.Fatalf("placeAt = %+v, %v; want 3 to move, not done", p, err)
		}
		if exists(filepath.Join(dir, SupervisorLeafName)) || readTrim(t, filepath.Join(dir, "cgroup.subtree_control")) != "" {
			t.Error("NoPlace changed the tree")
		}
		if !strings.Contains(p.String(), "moves its 3 process(es) into /svc/supervisor") {
			t.Errorf("String() = %q", p.String())
		}
	})
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		words []string
	}{
		{"controllers not delegated", map[string]string{"cgroup.controllers": "cpu io\n", "cgroup.subtree_control": "", "cgroup.type": "domain\n", "cgroup.procs": "4242\n"},
			ErrNotDelegated, []string{"memory, pids not in", "/svc/cgroup.controllers", "cgroup.subtree_control", "Delegate=yes"}},
		{"threaded cgroup", map[string]string{"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "", "cgroup.type": "threaded\n", "cgroup.procs": "4242\n"},
			ErrNotDelegated, []string{`type "threaded"`, "domain"}},
		{"not in its cgroup", delegatedFiles("1\n"), ErrUnavailable, []string{"pid 4242", "private cgroup namespace"}},
		{"a process of another pid namespace", delegatedFiles("0\n4242\n"), ErrNotDelegated, []string{"not a pid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fakeCgroup(t, root, "/svc", tc.files)
			_, err := placeAt(root, "/svc", pid, false)
			if !errors.Is(err, tc.want) {
				t.Fatalf("placeAt = %v, want %v", err, tc.want)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
