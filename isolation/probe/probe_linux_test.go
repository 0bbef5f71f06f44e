package probe

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/isolation/cgroup"
)

// helperEnv selects a helper process: the test binary re-executes itself
// with EXECFARM_PROBE_HELPER=ns:KIND and prints its /proc/self/ns/KIND.
const helperEnv = "EXECFARM_PROBE_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		kind, _ := strings.CutPrefix(mode, "ns:")
		link, err := os.Readlink("/proc/self/ns/" + kind)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Print(link)
		os.Exit(0)
	}
	leakcheck.Main(m)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the probe maps the sandbox uid range and creates cgroups")
	}
}

// testConfig probes a cgroup parent of this test run's own.
func testConfig(t *testing.T) Config {
	return Config{Cgroup: cgroup.Config{Parent: fmt.Sprintf("/execfarm-probe-test-%d", os.Getpid())}}
}

// inNewNamespace re-executes the test binary in a new user namespace and
// a new namespace of kind, independently of the probe's trial (host root
// mapped, so the binary stays readable), and returns the child's
// /proc/self/ns/KIND link.
func inNewNamespace(k nsKind) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=ns:"+k.proc)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER | k.flag,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helper in new %s namespace: %w", k.proc, err)
	}
	return string(out), nil
}

// TestRunHost runs the real probe on this host. Every namespace kind must
// be available; and where the probe says it is, creating one must work.
func TestRunHost(t *testing.T) {
	requireRoot(t)
	r := Run(testConfig(t))
	for _, l := range r.Layers {
		t.Logf("%-16s available=%-5v required=%-5v %s", l.Name, l.Available, l.Required, l.Detail)
	}
	for _, k := range nsKinds {
		t.Run(k.layer, func(t *testing.T) {
			l, ok := r.Layer(k.layer)
			if !ok {
				t.Fatalf("report has no %s layer", k.layer)
			}
			if !l.Available {
				t.Fatalf("%s not available: %s", k.layer, l.Detail)
			}
			self, err := os.Readlink("/proc/self/ns/" + k.proc)
			if err != nil {
				t.Fatal(err)
			}
			child, err := inNewNamespace(k)
			if err != nil {
				t.Fatalf("the probe says %s is available, but: %v", k.layer, err)
			}
			if child == self {
				t.Fatalf("the probe says %s is available, but the child is still in %s", k.layer, self)
			}
		})
	}
	for _, name := range []string{Cgroup, Seccomp, Landlock, Overlay, UIDRange} {
		if _, ok := r.Layer(name); !ok {
			t.Errorf("report has no %s layer", name)
		}
	}
	if err := r.Missing(nil); err != nil {
		t.Errorf("Missing on this host: %v", err)
	}
	if l, _ := r.Layer(Landlock); l.Available != strings.HasPrefix(l.Detail, "ABI ") {
		t.Errorf("landlock available=%v with detail %q", l.Available, l.Detail)
	}
}

func TestTryNamespaceBadBinary(t *testing.T) {
	requireRoot(t)
	cfg := Config{TrialBinary: filepath.Join(t.TempDir(), "absent")}.withDefaults()
	ok, detail := tryNamespace(cfg, nsKinds[1])
	if ok || !strings.Contains(detail, "absent") {
		t.Errorf("tryNamespace with a missing binary = %v, %q", ok, detail)
	}
}

// TestUnusableCgroupRoot points the cgroup root at a directory that is no
// cgroup filesystem: the cgroup layer must be missing, named, and not
// degradable.
func TestUnusableCgroupRoot(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	cfg.Cgroup.Root = t.TempDir()
	r := Run(cfg)
	l, _ := r.Layer(Cgroup)
	if l.Available {
		t.Fatalf("cgroup available at a plain directory: %s", l.Detail)
	}
	err := r.Missing(nil)
	if !errors.Is(err, ErrHostCannotIsolate) || !strings.Contains(err.Error(), "cgroup (") {
		t.Fatalf("Missing = %v, want ErrHostCannotIsolate naming cgroup", err)
	}
	if err := r.Missing([]string{"cgroup"}); !errors.Is(err, ErrNotDegradable) {
		t.Fatalf("Missing(cgroup allowed) = %v, want ErrNotDegradable", err)
	}
}

func TestUIDConflicts(t *testing.T) {
	write := func(t *testing.T, root, name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const base = 1 << 30
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the detail; nil: available
	}{
		{name: "free", files: map[string]string{
			"proc/1/status": "Name:\tinit\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
			"etc/passwd":    "root:x:0:0::/:/bin/sh\n",
			"etc/subuid":    "alice:100000:65536\n",
		}},
		{name: "process in range", files: map[string]string{
			"proc/42/status": fmt.Sprintf("Name:\tsandboxed\nUid:\t%d\t%d\t%d\t%d\nGid:\t0\t0\t0\t0\n", base+1000, base+1000, base+1000, base+1000),
			"proc/self/x":    "not a pid",
		}, want: []string{"pid 42 (sandboxed)"}},
		{name: "gid of a process in range", files: map[string]string{
			"proc/7/status": fmt.Sprintf("Name:\tg\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t%d\n", base),
		}, want: []string{"pid 7 (g)"}},
		{name: "passwd and group", files: map[string]string{
			"etc/passwd": fmt.Sprintf("svc:x:%d:0::/:/bin/false\n", base+5),
			"etc/group":  fmt.Sprintf("grp:x:%d:\n", base+6),
		}, want: []string{"/etc/passwd entry svc", "/etc/group entry grp"}},
		{name: "subuid overlaps from below", files: map[string]string{
			"etc/subuid": fmt.Sprintf("bob:%d:10\n", base-5),
		}, want: []string{"/etc/subuid gives bob"}},
		{name: "range just after is free", files: map[string]string{
			"etc/subgid": fmt.Sprintf("bob:%d:10\n", base+64*65536),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.files {
				write(t, root, name, content)
			}
			l := uidRangeLayer(Config{root: root}.withDefaults())
			if l.Available != (tt.want == nil) {
				t.Fatalf("available = %v: %s", l.Available, l.Detail)
			}
			for _, s := range tt.want {
				if !strings.Contains(l.Detail, s) {
					t.Errorf("detail %q does not contain %q", l.Detail, s)
				}
			}
		})
	}
}

func TestOverlayLayer(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if l := overlayLayer(Config{root: root}); l.Available || l.Required {
		t.Errorf("no /proc/filesystems: %+v", l)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/filesystems"), []byte("nodev\toverlay\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l := overlayLayer(Config{root: root}); !l.Available || l.Required {
		t.Errorf("overlay listed: %+v", l)
	}
}
