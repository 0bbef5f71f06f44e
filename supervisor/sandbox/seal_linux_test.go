package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func TestSeal(t *testing.T) {
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "worker")
	copyFile(t, echo, bin, 0o755)

	b, err := Seal(bin)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Seal(bin); err != nil || again != b {
		t.Fatalf("second Seal = %p, %v; want the same copy %p", again, err, b)
	}
	if b.Source() != bin {
		t.Errorf("Source() = %q, want %q", b.Source(), bin)
	}
	fd, err := strconv.Atoi(strings.TrimPrefix(b.ExecPath(), "/proc/self/fd/"))
	if err != nil || fd < execFDMin {
		t.Fatalf("ExecPath() = %q, want /proc/self/fd/N with N >= %d", b.ExecPath(), execFDMin)
	}

	// The host file changes; the sealed copy does not.
	copyFile(t, "/bin/false", bin+".new", 0o755)
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(b.ExecPath(), "sealed").Output()
	if err != nil || strings.TrimSpace(string(out)) != "sealed" {
		t.Fatalf("run sealed copy: %q, %v; want \"sealed\"", out, err)
	}

	// Writing through the descriptor or a fresh open is refused by the seals.
	if _, err := syscall.Pwrite(fd, []byte("x"), 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("pwrite on sealed copy: %v, want EPERM", err)
	}
	if f, err := os.OpenFile(b.ExecPath(), os.O_WRONLY, 0); err == nil {
		_, werr := f.Write([]byte("x"))
		f.Close()
		if !errors.Is(werr, syscall.EPERM) {
			t.Errorf("write through reopened copy: %v, want EPERM", werr)
		}
	}
}

func TestSealRefuses(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"missing", filepath.Join(dir, "missing")},
		{"not executable", plain},
		{"directory", dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Seal(tt.path); err == nil {
				t.Fatalf("Seal(%s) = %v, want an error", tt.path, b.ExecPath())
			}
		})
	}
}
