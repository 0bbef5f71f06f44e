package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is what bounds the memory of the supervisor's sandboxes: the
// host's and the supervisor's cgroup's.
type Memory struct {
	// TotalBytes is MemTotal of /proc/meminfo, bytes.
	TotalBytes int64
	// CgroupLimitBytes is the smallest memory limit of the supervisor's
	// cgroup and its ancestors (v2 memory.max, v1
	// memory.limit_in_bytes), bytes; 0 = none (or none readable).
	CgroupLimitBytes int64
}

// MinHostReserveBytes is the least of the memory that the default memory
// budget leaves to the host (its kernel, page cache, the supervisor and
// whatever else runs there): 1 GiB.
const MinHostReserveBytes = 1 << 30

// SupervisorReserveBytes is the memory every budget leaves to the
// supervisor itself, bytes: its documented bound with default settings
// (SECURITY.md, 512 MiB), which its own buffers are held within. The
// supervisor shares the host, or its cgroup, with the sandboxes it
// starts (their cgroups nest under its own), so that a budget over the
// memory available less this lets sandboxes within their limits and the
// supervisor together reach the host's or the cgroup's limit, and the
// kernel's OOM killer then kills a sandbox that kept within its own.
const SupervisorReserveBytes = 512 << 20

// AvailableBytes is the memory M the sandboxes and the supervisor
// share: MemTotal, or the supervisor's cgroup's limit when smaller.
func (m Memory) AvailableBytes() int64 {
	avail := m.TotalBytes
	if m.CgroupLimitBytes > 0 && m.CgroupLimitBytes < avail {
		avail = m.CgroupLimitBytes
	}
	return avail
}

// DefaultBudgetBytes returns the default node memory budget, bytes: the
// memory M available (AvailableBytes) less what is kept for the host,
// M/8 and at least MinHostReserveBytes (half of M on a host with less
// than 2 GiB), and never less than SupervisorReserveBytes. It is what
// sandboxes' limits may add up to (package budget); 0 or less when M
// leaves nothing beyond the supervisor's reserve.
func (m Memory) DefaultBudgetBytes() int64 {
	avail := m.AvailableBytes()
	keep := max(avail/8, min(MinHostReserveBytes, avail/2), SupervisorReserveBytes)
	return avail - keep
}

// CheckBudget returns an error when a budget of n bytes leaves the
// supervisor less than SupervisorReserveBytes of the memory available.
func (m Memory) CheckBudget(n int64) error {
	if avail := m.AvailableBytes(); n > avail-SupervisorReserveBytes {
		return fmt.Errorf("host: a memory budget of %d MiB leaves the supervisor less than its %d MiB of the %d MiB available (MemTotal, or the supervisor's cgroup's memory limit): sandboxes within their limits could be OOM-killed by the node's limit",
			n>>20, SupervisorReserveBytes>>20, avail>>20)
	}
	return nil
}

// ReadMemory reads Memory below root ("/" for the host; a fake tree in
// tests): root/proc/meminfo, root/proc/self/cgroup, and the memory limits
// of the supervisor's cgroup and its ancestors under root/sys/fs/cgroup
// (v2) or root/sys/fs/cgroup/memory (v1). A cgroup file that does not
// exist (a cgroup namespace's hidden ancestors, the root cgroup) is
// skipped. Errors: no readable MemTotal; a cgroup file that exists but
// cannot be read or parsed.
func ReadMemory(root string) (Memory, error) {
	var m Memory
	meminfo, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return m, fmt.Errorf("host: memory: %w", err)
	}
	for _, l := range strings.Split(string(meminfo), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kib <= 0 {
				return m, fmt.Errorf("host: memory: MemTotal %q: want a positive number of KiB", f[1])
			}
			m.TotalBytes = kib << 10
		}
	}
	if m.TotalBytes == 0 {
		return m, fmt.Errorf("host: memory: no MemTotal in %s", filepath.Join(root, "proc/meminfo"))
	}
	self, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return m, fmt.Errorf("host: memory: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path (cgroups(7))
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case hasController(f[1], "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean("/" + f[2]); ; p = path.Dir(p) {
			v, err := readLimit(filepath.Join(root, dir, p, file))
			if err != nil {
				return m, err
			}
			if v > 0 && (m.CgroupLimitBytes == 0 || v < m.CgroupLimitBytes) {
				m.CgroupLimitBytes = v
			}
			if p == "/" {
				break
			}
		}
	}
	return m, nil
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a memory limit file: bytes, 0 for "max" or a file that
// does not exist.
func readLimit(name string) (int64, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("host: memory: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("host: memory: %s: %q is not a limit", name, s)
	}
	return v, nil
}
