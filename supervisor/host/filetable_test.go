package host

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeFileTable writes a fake /proc and /sys below a temporary root.
func fakeFileTable(t *testing.T, fileMax int64, cmdline string, objectSize string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/sys/fs/file-max":      strconv.FormatInt(fileMax, 10) + "\n",
		"proc/sys/fs/file-nr":       "1139\t0\t" + strconv.FormatInt(fileMax, 10) + "\n",
		"proc/sys/vm/max_map_count": "65530\n",
		"proc/meminfo":              "MemTotal:       24661744 kB\nMemFree:        20000000 kB\n",
		"proc/cmdline":              cmdline + "\n",
	}
	if objectSize != "" {
		files["sys/kernel/slab/filp/object_size"] = objectSize + "\n"
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadFileTable(t *testing.T) {
	tests := []struct {
		name, cmdline, objectSize string
		want                      FileTable
	}{
		{"accounted", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro", "184",
			FileTable{Max: 2466174, Allocated: 1139, HostBudget: 2466174, FileBytes: 184, MaxMapCount: 65530, KmemAccounted: true}},
		{"nokmem", "ro cgroup.memory=nosocket,nokmem quiet", "184",
			FileTable{Max: 2466174, Allocated: 1139, HostBudget: 2466174, FileBytes: 184, MaxMapCount: 65530}},
		{"nosocket only", "cgroup.memory=nosocket", "",
			FileTable{Max: 2466174, Allocated: 1139, HostBudget: 2466174, MaxMapCount: 65530, KmemAccounted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readFileTable(fakeFileTable(t, 2466174, tt.cmdline, tt.objectSize))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("readFileTable = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSandboxFiles: memory bounds a sandbox's files when kernel memory is
// accounted; otherwise its descriptors and mappings do, and never the
// descriptors alone.
func TestSandboxFiles(t *testing.T) {
	ft := FileTable{HostBudget: 2466174, FileBytes: 184, MaxMapCount: 65530, KmemAccounted: true}
	tests := []struct {
		name                   string
		ft                     FileTable
		memory, processes, fds int64
		want                   int64
	}{
		{"default limits: memory binds", ft, 512 << 20, 256, 1024, (512 << 20) / 184},
		{"ceilings: memory binds", ft, 8 << 30, 4096, 65536, (8 << 30) / 184},
		{"tiny memory", ft, 16 << 20, 8, 16, (16 << 20) / 184},
		{"unknown object size: the smallest ever", FileTable{MaxMapCount: 65530, KmemAccounted: true}, 1 << 20, 256, 1024, (1 << 20) / minFileBytes},
		{"nokmem: descriptors, mappings, executables, in flight", FileTable{MaxMapCount: 65530}, 512 << 20, 256, 1024, 257*(1024+65530+1) + 1024},
		{"mappings bind below memory", FileTable{FileBytes: 184, MaxMapCount: 10, KmemAccounted: true}, 512 << 20, 8, 16, 9*(16+10+1) + 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ft.SandboxFiles(tt.memory, tt.processes, tt.fds); got != tt.want {
				t.Errorf("SandboxFiles(%d, %d, %d) = %d, want %d", tt.memory, tt.processes, tt.fds, got, tt.want)
			}
		})
	}
	// The descriptors alone are no bound: 256 processes of 1024
	// descriptors hold 262144, a sandbox of 512 MiB about 2.9 million.
	if got := ft.SandboxFiles(512<<20, 256, 1024); got <= 256*1024 {
		t.Errorf("SandboxFiles at the default limits = %d, want more than the descriptors alone", got)
	}
	if got, want := ft.Required(16, 8<<30, 4096, 65536), int64(2466174)+16*((8<<30)/184); got != want {
		t.Errorf("Required = %d, want %d", got, want)
	}
}

// TestReserveFileTable: fs.file-max is raised to Required when lower, and
// left alone (never lowered) when it is enough.
func TestReserveFileTable(t *testing.T) {
	root := fakeFileTable(t, 2466174, "ro", "184")
	before, now, err := reserveFileTable(root, 16, 8<<30, 4096, 65536)
	if err != nil {
		t.Fatal(err)
	}
	want := before.Required(16, 8<<30, 4096, 65536)
	if before.Max != 2466174 || now != want {
		t.Fatalf("reserveFileTable: before %d now %d, want 2466174 then %d", before.Max, now, want)
	}
	got, err := readInt(root, "proc/sys/fs/file-max", 0)
	if err != nil || got != want {
		t.Fatalf("fs.file-max after the reserve: %d, %v; want %d", got, err, want)
	}
	// Enough already (systemd sets LONG_MAX): nothing is written.
	root = fakeFileTable(t, 1<<63-1, "ro", "184")
	if _, now, err := reserveFileTable(root, 16, 8<<30, 4096, 65536); err != nil || now != 1<<63-1 {
		t.Fatalf("reserveFileTable with fs.file-max at LONG_MAX: now %d, %v; want it untouched", now, err)
	}
}
