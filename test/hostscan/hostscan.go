// Package hostscan is the host side of the checks shared by
// test/integration and test/hostile: the host's processes from /proc (what
// sandboxes leave behind) and a loopback listener a sandbox must not reach.
// Linux only; test support, not product code.
package hostscan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/execfarm/execfarm/isolation/cgroup"
)

// Proc is one host process as seen in /proc.
type Proc struct {
	PID     int
	PPID    int      // parent process id
	UIDs    []uint32 // real, effective, saved, filesystem
	State   string
	Cmdline string // NUL separators replaced by spaces
}

func (p Proc) String() string {
	cmd := p.Cmdline
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	return fmt.Sprintf("pid %d uids %v state %s cmdline %q", p.PID, p.UIDs, p.State, cmd)
}

// Procs lists the host's processes; processes that exit while being read
// are left out.
func Procs() []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		p := Proc{PID: pid}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch k {
			case "Uid":
				for _, f := range strings.Fields(v) {
					u, _ := strconv.ParseUint(f, 10, 32)
					p.UIDs = append(p.UIDs, uint32(u))
				}
			case "State":
				p.State = strings.TrimSpace(v)
			case "PPid":
				p.PPID, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		p.Cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		out = append(out, p)
	}
	return out
}

// InUIDWindow returns the processes (zombies included) with any uid in
// [lo, hi): what is left of sandboxes whose ranges lie there.
func InUIDWindow(lo, hi uint32) []Proc {
	var out []Proc
	for _, p := range Procs() {
		if slices.ContainsFunc(p.UIDs, func(u uint32) bool { return u >= lo && u < hi }) {
			out = append(out, p)
		}
	}
	return out
}

// WithMarker returns the processes, other than the caller, whose command
// line contains marker.
func WithMarker(marker string) []Proc {
	var out []Proc
	for _, p := range Procs() {
		if p.PID != os.Getpid() && strings.Contains(p.Cmdline, marker) {
			out = append(out, p)
		}
	}
	return out
}

// RemoveLeftovers removes what a suite's supervisors may have left on the
// host: every sandbox cgroup under cg's parent (killing their processes)
// and the parent itself, then closes logFile (if any) and removes dir. It
// returns every error, joined.
func RemoveLeftovers(cg cgroup.Config, logFile *os.File, dir string) error {
	var errs []error
	if _, err := cgroup.Cleanup(cg); err != nil {
		errs = append(errs, fmt.Errorf("clean up sandbox cgroups: %w", err))
	}
	if err := cgroup.RemoveParent(cg); err != nil {
		errs = append(errs, fmt.Errorf("remove cgroup parent: %w", err))
	}
	if logFile != nil {
		logFile.Close()
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
