//go:build linux

package hostile

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/supervisor/limits"
)

// TestFileTableHoldsEverySandbox: once the suite's supervisor runs, the
// host's file table has room for what every one of its sandbox slots
// could hold open at the server's ceilings. A sandbox's open files are
// bounded by its memory (case files_beyond_descriptors.py: descriptors
// bound nothing, since a mapped file stays open after close, and the
// memory limit stops it), each costing at least the filp slab's object
// size; fs.file-max counts them for the whole host and refuses a file to
// every unprivileged process once reached. Before the supervisor raised
// it, fs.file-max (2 466 174 on a 24 GiB host) was below what two
// sandboxes at the default 512 MiB could hold.
func TestFileTableHoldsEverySandbox(t *testing.T) {
	requireRoot(t)
	field := func(path string, i int) int64 {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.Fields(string(b))[i], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return n
	}
	fileMax := field("/proc/sys/fs/file-max", 0)
	allocated := field("/proc/sys/fs/file-nr", 0)
	fileBytes := int64(128) // smaller than struct file has ever been
	if _, err := os.Stat("/sys/kernel/slab/filp/object_size"); err == nil {
		fileBytes = field("/sys/kernel/slab/filp/object_size", 0)
	}
	ceil := limits.DefaultCeilings()
	perSandbox := ceil.MemoryBytes / fileBytes
	if room, need := fileMax-allocated, int64(uidSlots)*perSandbox; room < need {
		t.Errorf("fs.file-max %d with %d files open leaves room for %d more; %d sandboxes at the ceiling of %d bytes could hold %d each (%d bytes a file), %d in all",
			fileMax, allocated, room, uidSlots, ceil.MemoryBytes, perSandbox, fileBytes, need)
	}
}
