//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procEntry is one host process as seen in /proc.
type procEntry struct {
	pid     int
	uids    []uint32 // real, effective, saved, filesystem
	state   string
	cmdline string // NUL separators replaced by spaces
}

func (p procEntry) String() string {
	return fmt.Sprintf("pid %d uids %v state %s cmdline %q", p.pid, p.uids, p.state, shorten(p.cmdline))
}

// hostProcs lists the host's processes; processes that exit while being
// read are left out.
func hostProcs() []procEntry {
	ents, _ := os.ReadDir("/proc")
	var out []procEntry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		p := procEntry{pid: pid}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch k {
			case "Uid":
				for _, f := range strings.Fields(v) {
					u, _ := strconv.ParseUint(f, 10, 32)
					p.uids = append(p.uids, uint32(u))
				}
			case "State":
				p.state = strings.TrimSpace(v)
			}
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		p.cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		out = append(out, p)
	}
	return out
}

// procsWithMarker returns the host processes, other than this one, whose
// command line contains marker.
func procsWithMarker(marker string) []procEntry {
	var out []procEntry
	for _, p := range hostProcs() {
		if p.pid != os.Getpid() && strings.Contains(p.cmdline, marker) {
			out = append(out, p)
		}
	}
	return out
}

// sandboxProcs returns the host processes (zombies included) with any uid
// in [lo, hi).
func sandboxProcs(lo, hi uint32) []procEntry {
	var out []procEntry
	for _, p := range hostProcs() {
		for _, u := range p.uids {
			if u >= lo && u < hi {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// sandboxLeftovers lists what remains on the host of the sandbox id: its
// cgroup under any controller's parent, its state directory, mounts
// naming it.
func (s *suite) sandboxLeftovers(id string) []string {
	if id == "" {
		return nil
	}
	var out []string
	for _, parent := range s.cgParents {
		if d := filepath.Join(parent, id); exists(d) {
			out = append(out, "cgroup "+d)
		}
	}
	if d := filepath.Join(s.stateDir, "sb", id); exists(d) {
		out = append(out, "state dir "+d)
	}
	for _, m := range mountsContaining(id) {
		out = append(out, "mount "+m)
	}
	return out
}

// leftovers lists what remains of any sandbox of the suite: entries of
// the state dir's sb/, cgroups anywhere below the suite's cgroup parents,
// mounts below the suite's directory, and processes in the suite's uid
// window. Empty means every sandbox was destroyed.
func (s *suite) leftovers() []string {
	var out []string
	ents, _ := os.ReadDir(filepath.Join(s.stateDir, "sb"))
	for _, e := range ents {
		out = append(out, "state dir "+filepath.Join(s.stateDir, "sb", e.Name()))
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
	for _, p := range sandboxProcs(s.uidBase, s.uidEnd) {
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
