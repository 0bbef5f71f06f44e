package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadMemory(t *testing.T) {
	const gib = 1 << 30
	meminfo := "MemTotal:       25165824 kB\nMemFree: 1 kB\n" // 24 GiB
	for _, tt := range []struct {
		name   string
		files  map[string]string
		limit  int64
		budget int64
	}{
		{"no cgroup limit", map[string]string{"proc/self/cgroup": "0::/a/b\n", "sys/fs/cgroup/a/b/memory.max": "max\n"}, 0, 21 * gib},
		{"v2 ancestor limit", map[string]string{"proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n", "sys/fs/cgroup/a/memory.max": "8589934592\n"}, 8 * gib, 7 * gib},
		{"v1 limit, hidden ancestors skipped", map[string]string{"proc/self/cgroup": "4:memory:/x/y\n0::/\n",
			"sys/fs/cgroup/memory/x/y/memory.limit_in_bytes": "4294967296\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n"}, 4 * gib, 3 * gib},
		{"small host keeps half", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1610612736\n"}, 1610612736, 805306368},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["proc/meminfo"] = meminfo
			m, err := ReadMemory(writeTree(t, tt.files))
			if err != nil {
				t.Fatal(err)
			}
			if m.TotalBytes != 24*gib || m.CgroupLimitBytes != tt.limit {
				t.Fatalf("ReadMemory = %+v, want total %d, cgroup limit %d", m, 24*gib, tt.limit)
			}
			if got := m.DefaultBudgetBytes(); got != tt.budget {
				t.Fatalf("DefaultBudgetBytes = %d, want %d", got, tt.budget)
			}
		})
	}
}

func TestReadMemoryErrors(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no MemTotal":   {"proc/meminfo": "MemFree: 1 kB\n", "proc/self/cgroup": "0::/\n"},
		"bad limit":     {"proc/meminfo": "MemTotal: 100 kB\n", "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"},
		"no own cgroup": {"proc/meminfo": "MemTotal: 100 kB\n"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadMemory(writeTree(t, files)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestBudgetKeepsTheSupervisor: every memory budget leaves the
// supervisor its documented bound, SupervisorReserveBytes, of the memory
// it shares with its sandboxes: the default keeps at least that, and an
// explicit budget over the memory available less it is refused. Before,
// a 1 GiB cgroup's default budget was 512 MiB and --memory-budget took
// any value, so sandboxes within their limits and the supervisor
// together reached the cgroup's limit, and the kernel killed a sandbox
// that had kept within its own.
func TestBudgetKeepsTheSupervisor(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		avail, budget int64
	}{
		{avail: 1024 * mib, budget: 512 * mib},
		{avail: 800 * mib, budget: 288 * mib},
		{avail: 512 * mib, budget: 0},
		{avail: 1200 * mib, budget: 600 * mib},
		{avail: 24 << 30, budget: 21 << 30},
	} {
		m := Memory{TotalBytes: 24 << 30, CgroupLimitBytes: tt.avail}
		if got := m.DefaultBudgetBytes(); got != tt.budget || got > tt.avail-SupervisorReserveBytes {
			t.Errorf("%d MiB available: default budget %d MiB, want %d MiB", tt.avail/mib, got/mib, tt.budget/mib)
		}
	}
	m := Memory{TotalBytes: 24 << 30, CgroupLimitBytes: 1200 * mib}
	if err := m.CheckBudget(688 * mib); err != nil {
		t.Errorf("a budget that leaves the supervisor 512 MiB: %v", err)
	}
	if err := m.CheckBudget(689 * mib); err == nil || !strings.Contains(err.Error(), "512 MiB") {
		t.Errorf("a budget that leaves the supervisor 511 MiB: %v, want an error naming its 512 MiB", err)
	}
}
