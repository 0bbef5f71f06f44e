package host

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReserveFileTableRefusesWhatItCannotRaise: when fs.file-max is too
// low and cannot be written, the error names the value to set. The fake
// file-max is the host's read-only fs.file-nr (mode 0444, which root
// cannot write either): its first field reads as a small file-max.
func TestReserveFileTableRefusesWhatItCannotRaise(t *testing.T) {
	root := fakeFileTable(t, 2466174, "ro", "184")
	p := filepath.Join(root, "proc/sys/fs/file-max")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/sys/fs/file-nr", p); err != nil {
		t.Fatal(err)
	}
	ft, _, err := reserveFileTable(root, 16, 8<<30, 4096, 65536)
	if err == nil {
		t.Fatal("reserveFileTable raised a file-max it cannot write")
	}
	want := ft.Required(16, 8<<30, 4096, 65536)
	if !strings.Contains(err.Error(), "sysctl -w fs.file-max=") || !strings.Contains(err.Error(), " "+strconv.FormatInt(want, 10)) {
		t.Errorf("error %q does not name the value to set (%d)", err, want)
	}
}
