//go:build linux

package hostile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// sandboxLeftovers lists what remains on the host of the sandbox id: its
// cgroup under any controller's parent, its state directory, mounts
// naming it. A cgroup comes with the processes it still lists, each with
// its state and kernel wait channel (why it has not exited).
func (s *suite) sandboxLeftovers(stateDir, id string) []string {
	if id == "" {
		return nil
	}
	var out []string
	for _, parent := range s.cgParents {
		if d := filepath.Join(parent, id); exists(d) {
			out = append(out, "cgroup "+d+cgroupProcesses(d))
		}
	}
	if d := filepath.Join(stateDir, "sb", id); exists(d) {
		out = append(out, "state dir "+d)
	}
	for _, m := range mountsContaining(id) {
		out = append(out, "mount "+m)
	}
	return out
}

// cgroupProcesses describes the processes listed in cgroup dir and its
// descendants: "; pid 12 (python3) D wchan exit_mmap, …", or "" when none.
func cgroupProcesses(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		procs, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, pid := range strings.Fields(string(procs)) {
			stat, _ := os.ReadFile(filepath.Join("/proc", pid, "stat"))
			wchan, _ := os.ReadFile(filepath.Join("/proc", pid, "wchan"))
			// stat: "pid (comm) state …"; comm may hold spaces.
			desc := string(stat)
			if i := strings.LastIndexByte(desc, ')'); i >= 0 && i+3 <= len(desc) {
				desc = desc[:i+3]
			}
			fmt.Fprintf(&b, "; %s in %s wchan %s", strings.TrimSpace(desc), strings.TrimPrefix(p, dir), wchan)
		}
		return nil
	})
	return b.String()
}

// sandboxGone waits until nothing of sandbox id is left on the host
// (sandboxLeftovers) and returns what is still there after 30 s in the
// environment's time: a result is published once no process of its
// execution can run, and the rest of the sandbox's teardown follows it.
func (s *suite) sandboxGone(stateDir, id string) []string {
	deadline := time.Now().Add(testbin.Scaled(30 * time.Second))
	for {
		l := s.sandboxLeftovers(stateDir, id)
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(2 * time.Millisecond) // polling interval
	}
}

// leftovers lists what remains of any sandbox of the suite: entries of
// the state dir's sb/, cgroups anywhere below the suite's cgroup parents,
// mounts below the suite's directory, and processes in the suite's uid
// window. Empty means every sandbox was destroyed.
func (s *suite) leftovers() []string {
	var out []string
	for _, dir := range []string{s.stateDir, s.proxied.stateDir} {
		ents, _ := os.ReadDir(filepath.Join(dir, "sb"))
		for _, e := range ents {
			out = append(out, "state dir "+filepath.Join(dir, "sb", e.Name()))
		}
	}
	for _, parent := range s.cgParents {
		_ = filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != parent {
				out = append(out, "cgroup "+p)
			}
			return nil
		})
	}
	for _, m := range mountsContaining(s.dir) {
		out = append(out, "mount "+m)
	}
	for _, p := range hostscan.InUIDWindow(s.uidBase, s.uidEnd) {
		out = append(out, "process "+p.String())
	}
	return out
}

// mountsContaining returns the lines of this process's mountinfo that
// contain sub.
func mountsContaining(sub string) []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"cannot read /proc/self/mountinfo: " + err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
