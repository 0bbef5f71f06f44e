package host

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// leftoverSandbox makes what a crashed supervisor leaves of one live
// sandbox under sb: its directory with a listening unix socket file (the
// go-plugin socket) and its root mountpoint, owned by another uid and
// mode 0700 as Start makes it.
func leftoverSandbox(t *testing.T, sb, id string) string {
	t.Helper()
	dir := filepath.Join(sb, id)
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "plugin123"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, as after a crash
	if err := os.WriteFile(filepath.Join(dir, "root", "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(dir, "root"), 1<<30, 1<<30); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCleanupStateDir(t *testing.T) {
	noMounts := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(noMounts, []byte("22 1 0:21 / / rw,relatime - ext4 /dev/vda1 rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		sandboxes   []string // leftover sandbox directories
		others      []string // other entries of sb/, which must stay
		noSBDir     bool
		wantRemoved int
	}{
		{name: "no sb directory", noSBDir: true},
		{name: "empty sb directory"},
		{name: "one leftover", sandboxes: []string{"sb-0123456789abcdef"}, wantRemoved: 1},
		{name: "three leftovers and foreign entries", sandboxes: []string{"sb-0000000000000001", "sb-0000000000000002", "sb-0000000000000003"},
			others: []string{"lost+found", "README"}, wantRemoved: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			sb := filepath.Join(state, "sb")
			if !tt.noSBDir {
				if err := os.Mkdir(sb, 0o711); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range tt.sandboxes {
				leftoverSandbox(t, sb, id)
			}
			for _, name := range tt.others {
				if err := os.WriteFile(filepath.Join(sb, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := cleanupStateDir(state, noMounts)
			if err != nil || removed != tt.wantRemoved {
				t.Fatalf("cleanupStateDir = %d, %v; want %d, nil", removed, err, tt.wantRemoved)
			}
			ents, _ := os.ReadDir(sb)
			var left []string
			for _, e := range ents {
				left = append(left, e.Name())
			}
			slices.Sort(left)
			want := slices.Sorted(slices.Values(tt.others))
			if !slices.Equal(left, want) {
				t.Fatalf("sb/ holds %q after cleanup; want %q", left, want)
			}
			// Idempotent: nothing more to remove.
			if removed, err := cleanupStateDir(state, noMounts); err != nil || removed != 0 {
				t.Fatalf("second cleanupStateDir = %d, %v; want 0, nil", removed, err)
			}
		})
	}
}

func TestMountPoints(t *testing.T) {
	tests := []struct {
		name, mountinfo string
		want            []string
	}{
		{"plain", "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n", []string{"/mnt/parent"}},
		{"escaped space, tab, newline, backslash", `40 22 0:50 / /run/a\040b\011c\012d\134e rw - tmpfs tmpfs rw`, []string{"/run/a b\tc\nd\\e"}},
		{"backslash not followed by three octal digits", `40 22 0:50 / /x\09 rw - tmpfs tmpfs rw`, []string{`/x\09`}},
		{"short and empty lines skipped", "\n1 2 3\n40 22 0:50 / /y rw - tmpfs tmpfs rw\n", []string{"/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mountPoints(tt.mountinfo); !slices.Equal(got, tt.want) {
				t.Fatalf("mountPoints = %q; want %q", got, tt.want)
			}
		})
	}
}
