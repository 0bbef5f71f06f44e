package host

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// fakePtys writes a fake /proc/sys/kernel/pty below a temporary root.
func fakePtys(t *testing.T, max, reserve int64) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "proc/sys/kernel/pty")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]int64{"max": max, "reserve": reserve} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReservePtys(t *testing.T) {
	const slots = 40
	want := int64(1024 + defaultPtyShare + slots*rootfs.PtysPerSandbox)
	for _, tt := range []struct {
		name       string
		max, after int64
	}{
		{"raised from the kernel's default", 4096, want},
		{"left when higher", 1 << 20, 1 << 20},
		{"left when exactly enough", want, want},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := fakePtys(t, tt.max, 1024)
			before, now, err := reservePtys(root, slots)
			if err != nil {
				t.Fatal(err)
			}
			if before.Max != tt.max || before.Reserve != 1024 || now != tt.after {
				t.Errorf("reservePtys = %+v, %d; want max %d, reserve 1024, now %d", before, now, tt.max, tt.after)
			}
			b, _ := os.ReadFile(filepath.Join(root, "proc/sys/kernel/pty/max"))
			if got := strings.TrimSpace(string(b)); got != strconv.FormatInt(tt.after, 10) {
				t.Errorf("kernel.pty.max file = %s, want %d", got, tt.after)
			}
		})
	}
}
