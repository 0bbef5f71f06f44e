package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
)

// TestRemoveStaleEmbedded: what an embedded supervisor of a dead process
// left (cgroup parent with a sandbox cgroup, temporary directory) is
// removed; what belongs to a live pid (1 here) is kept.
func TestRemoveStaleEmbedded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups")
	}
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadName := EmbeddedPrefix + strconv.Itoa(dead.Process.Pid)
	liveName := EmbeddedPrefix + "1"
	var managers []*cgroup.Manager
	for _, name := range []string{deadName, liveName} {
		cfg := cgroup.Config{Parent: "/" + name}
		m, err := cgroup.New(cfg, "sb-stale", cgroup.Limits{PidsMax: 8})
		if err != nil {
			t.Skipf("cannot create a cgroup here: %v", err)
		}
		managers = append(managers, m)
		t.Cleanup(func() {
			_ = m.Delete()
			_ = cgroup.RemoveParent(cfg)
		})
		dir := filepath.Join(EmbeddedRoot, name+"-test")
		if err := os.MkdirAll(filepath.Join(dir, "sb", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	RemoveStaleEmbedded(cgroup.Config{})
	for i, name := range []string{deadName, liveName} {
		_, err := os.Stat(filepath.Dir(managers[i].Path())) // the parent
		_, derr := os.Stat(filepath.Join(EmbeddedRoot, name+"-test"))
		gone := os.IsNotExist(err) && os.IsNotExist(derr)
		kept := err == nil && derr == nil
		switch {
		case name == deadName && !gone:
			t.Errorf("leftovers of dead pid %d kept: cgroup %v, directory %v", dead.Process.Pid, err, derr)
		case name == liveName && !kept:
			t.Errorf("leftovers of live pid 1 removed: cgroup %v, directory %v", err, derr)
		}
	}
}
