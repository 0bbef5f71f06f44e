package host

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
)

// TestCheckHostUnusableCgroup is the acceptance test of the start-up
// check: a cgroup root the supervisor cannot use (a plain directory, no
// cgroup filesystem) makes it refuse to start, naming the layer, and
// --allow-degraded=cgroup does not change that (sandboxes need their
// cgroup).
func TestCheckHostUnusableCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the probe maps the sandbox uid range")
	}
	pc := probe.Config{Cgroup: cgroup.Config{Root: t.TempDir(), Parent: fmt.Sprintf("/execfarm-check-%d", os.Getpid())}}
	layers, err := Check(pc, nil)
	if !errors.Is(err, ErrCannotIsolate) {
		t.Fatalf("Check = %v, want ErrCannotIsolate", err)
	}
	if !strings.Contains(err.Error(), "missing cgroup (") {
		t.Errorf("error %q does not name the cgroup layer", err)
	}
	var found bool
	for _, l := range layers {
		if l.GetName() == probe.Cgroup {
			found = true
			if l.GetAvailable() || l.GetActive() {
				t.Errorf("cgroup layer %+v", l)
			}
		}
	}
	if !found {
		t.Error("no cgroup layer reported")
	}
	_, err = Check(pc, []string{"cgroup"})
	if !errors.Is(err, probe.ErrNotDegradable) || !strings.Contains(err.Error(), "--allow-degraded=cgroup") {
		t.Errorf("Check(allow cgroup) = %v, want ErrNotDegradable naming cgroup", err)
	}
	// The real host, with the real cgroup root, starts, in a uid window
	// locked as an embedded supervisor locks one (others may be running).
	base, release, err := LockEmbeddedWindow(os.Getpid(), LockDir())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := Check(probe.Config{Cgroup: cgroup.Config{Parent: pc.Cgroup.Parent}, UIDBase: base}, nil); err != nil {
		t.Errorf("Check on this host: %v", err)
	}
}
