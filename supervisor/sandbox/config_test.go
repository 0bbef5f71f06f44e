package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestValidateStateDirFitsSocketPath(t *testing.T) {
	ids := NewIDPool(1<<30, 0, 1)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, GojaBinaryName), []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := Config{WorkerBinary: filepath.Join(bin, "w"), IDs: ids, StateDir: "/run/execfarm"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("default-like config: %v", err)
	}
	noGoja := ok
	noGoja.WorkerBinary = "/w"
	if err := noGoja.Validate(); err == nil || !strings.Contains(err.Error(), "/execfarm-goja") {
		t.Fatalf("no goja binary next to the worker: %v", err)
	}
	// A symlinked worker: goja is found next to its target.
	if err := os.WriteFile(filepath.Join(bin, "w"), []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "execfarm-worker")
	if err := os.Symlink(filepath.Join(bin, "w"), link); err != nil {
		t.Fatal(err)
	}
	linked := ok
	linked.WorkerBinary = link
	if err := linked.Validate(); err != nil {
		t.Fatalf("goja next to the symlinked worker's target: %v", err)
	}
	// Present but not runnable by the sandbox user, or not a program.
	for name, setup := range map[string]func(p string) error{
		"mode 0700": func(p string) error { return os.WriteFile(p, []byte("\x7fELF"), 0o700) },
		"not ELF":   func(p string) error { return os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755) },
		"empty":     func(p string) error { return os.WriteFile(p, nil, 0o755) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	} {
		p := filepath.Join(t.TempDir(), GojaBinaryName)
		if err := setup(p); err != nil {
			t.Fatal(err)
		}
		bad := ok
		bad.GojaBinary = p
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Validate = %v, want an error naming %s", name, err, p)
		}
	}
	long := ok
	long.StateDir = "/" + strings.Repeat("x", socketPathBudget)
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "unix socket") {
		t.Fatalf("over-long state dir: %v", err)
	}
	for _, c := range []Config{{IDs: ids}, {WorkerBinary: "/w"}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
}

func TestIDPoolDisjointRanges(t *testing.T) {
	p := NewIDPool(1<<30, 65536, 3)
	seen := map[uint32]bool{}
	var releases []func()
	for i := 0; i < 3; i++ {
		r, release, err := p.Acquire()
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.HostID] || r.HostID < 1<<30 {
			t.Fatalf("range %d reused or below base", r.HostID)
		}
		seen[r.HostID] = true
		releases = append(releases, release)
	}
	if _, _, err := p.Acquire(); err == nil {
		t.Fatal("a 4th range from a pool of 3")
	}
	releases[1]()
	releases[1]() // idempotent
	if p.InUse() != 2 {
		t.Fatalf("InUse = %d, want 2", p.InUse())
	}
	if _, _, err := p.Acquire(); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestValidateStateDirSearchableByOthers: a state directory below a 0700
// directory is refused, naming the directory in the way.
func TestValidateStateDirSearchableByOthers(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, GojaBinaryName), []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Short: the state directory must fit in a unix socket path.
	private, err := os.MkdirTemp("", "xf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	c := Config{WorkerBinary: filepath.Join(bin, "w"), IDs: NewIDPool(1<<30, 0, 1), StateDir: filepath.Join(private, "state")}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), private+" (mode 0700) is not searchable") {
		t.Fatalf("state dir under a 0700 directory: Validate = %v, want an error naming %s", err, private)
	}
	// Through a symlink whose target lies below the 0700 directory.
	inner := filepath.Join(private, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	link := private + "-link"
	if err := os.Symlink(inner, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(link) })
	linked := c
	linked.StateDir = filepath.Join(link, "state")
	if err := linked.Validate(); err == nil || !strings.Contains(err.Error(), private+" (mode 0700)") {
		t.Fatalf("state dir through a symlink into a 0700 directory: Validate = %v", err)
	}
	if err := os.Chmod(private, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("after chmod 0711: Validate = %v", err)
	}
	if err := linked.Validate(); err != nil {
		t.Fatalf("through the symlink after chmod 0711: Validate = %v", err)
	}
	relative := c
	relative.StateDir = "state"
	if err := relative.Validate(); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Fatalf("relative state dir: Validate = %v", err)
	}
}

// TestMakeStateDirIgnoresUmask: directories it creates are 0711 under any
// umask, so that sandbox workers pass through them.
func TestMakeStateDirIgnoresUmask(t *testing.T) {
	base, err := os.MkdirTemp("", "xf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(base, "a", "b", "state")
	if err := MakeStateDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), dir} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o711 {
			t.Errorf("%s: mode %v, %v; want 0711", p, fi.Mode().Perm(), err)
		}
	}
	if fi, _ := os.Stat(base); fi.Mode().Perm() != 0o700 {
		t.Errorf("an existing directory's mode changed to %v", fi.Mode().Perm())
	}
}
