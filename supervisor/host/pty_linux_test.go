package host

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReservePtysRefusesWhatItCannotRaise: when kernel.pty.max is too low
// and cannot be written (here a link to the read-only kernel.pty.nr, as a
// read-only /proc/sys in a container), the supervisor must not start, and
// the error names the value to set.
func TestReservePtysRefusesWhatItCannotRaise(t *testing.T) {
	root := fakePtys(t, 4096, 1024)
	p := filepath.Join(root, "proc/sys/kernel/pty/max")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/sys/kernel/pty/nr", p); err != nil {
		t.Fatal(err)
	}
	pt, _, err := reservePtys(root, 16)
	if err == nil {
		t.Fatal("reservePtys raised a kernel.pty.max it cannot write")
	}
	want := pt.Required(16)
	if !strings.Contains(err.Error(), "sysctl -w kernel.pty.max="+strconv.FormatInt(want, 10)) {
		t.Errorf("error %q does not name the value to set (%d)", err, want)
	}
}
