package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/supervisor/limits"
)

const example = `
profiles:
  default:
    runtime: shell
    limits:
      max_memory_bytes: 268435456
      timeoutMs: 60000
    shutdownAfterSeconds: 600
  python-large:
    description: Python with 2 GiB and two cores
    runtime: python
    limits: {max_memory_bytes: 2147483648, max_cpu_percent: 200, workspace_bytes: 536870912}
    idleTimeoutSeconds: 120
  bare: {}
`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "bare,default,python-large" {
		t.Fatalf("names %s", got)
	}
	def, err := s.Get("")
	if err != nil {
		t.Fatal(err)
	}
	l, err := def.Resolve(limits.Default(), limits.DefaultCeilings())
	if err != nil {
		t.Fatal(err)
	}
	want := limits.Default()
	want.MemoryBytes, want.TimeoutMs = 256<<20, 60000
	if l != want || def.Runtime != "shell" || def.ShutdownAfter == nil || *def.ShutdownAfter != 10*time.Minute || def.IdleTimeout != nil {
		t.Errorf("default = %+v, limits %+v", def, l)
	}
	py, _ := s.Get("python-large")
	l, _ = py.Resolve(limits.Default(), limits.DefaultCeilings())
	if l.MemoryBytes != 2<<30 || l.CPUPercent != 200 || l.WorkspaceBytes != 512<<20 || l.Processes != limits.Default().Processes ||
		py.Runtime != "python" || py.ShutdownAfter != nil || *py.IdleTimeout != 2*time.Minute || py.Description == "" {
		t.Errorf("python-large = %+v, limits %+v", py, l)
	}
	bare, _ := s.Get("bare")
	if l, _ := bare.Resolve(limits.Default(), limits.DefaultCeilings()); l != limits.Default() || bare.Runtime != "" {
		t.Errorf("bare = %+v, %+v", bare, l)
	}
	var unknown *UnknownError
	if _, err := s.Get("gpu"); !errors.As(err, &unknown) || !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "bare, default, python-large") {
		t.Errorf("Get(gpu): %v", err)
	}
	// Without a file, only the default, which is the server's defaults.
	d, err := Default().Get(DefaultName)
	if err != nil || d.Limits != nil || d.Runtime != "" || d.ShutdownAfter != nil {
		t.Errorf("Default() = %+v, %v", d, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ name, in, errPart string }{
		{"unknown top-level field", "pools: {}", "unknown field"},
		{"unknown profile field", "profiles: {a: {memory: 1}}", "unknown field"},
		{"unknown limit", "profiles: {a: {limits: {max_gpus: 1}}}", "max_gpus"},
		{"bad name", "profiles: {Big_One: {}}", "not a profile name"},
		{"bad runtime", "profiles: {a: {runtime: ruby}}", "runtime \"ruby\""},
		{"negative lifetime", "profiles: {a: {shutdownAfterSeconds: -1}}", "shutdownAfterSeconds -1"},
		{"huge idle timeout", "profiles: {a: {idleTimeoutSeconds: 9999999999999}}", "idleTimeoutSeconds"},
		{"long description", "profiles: {a: {description: " + strings.Repeat("d", 300) + "}}", "description"},
		{"not YAML", "profiles: [", "profile"},
		{"too big", "# " + strings.Repeat("x", MaxFileBytes), "over"},
		{"too many", manyProfiles(MaxProfiles + 1), "at most 64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Fatalf("Parse: %v, want an error with %q", err, tt.errPart)
			}
		})
	}
	if _, err := Parse([]byte(manyProfiles(MaxProfiles))); err != nil {
		t.Errorf("%d profiles: %v", MaxProfiles, err)
	}
}

func manyProfiles(n int) string {
	var b strings.Builder
	b.WriteString("profiles:\n")
	for i := range n {
		b.WriteString("  p" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": {}\n")
	}
	return b.String()
}

// TestValidate: a profile over a ceiling, below a minimum or with a
// lifetime the server refuses stops the server at start, naming it.
func TestValidate(t *testing.T) {
	maxLife := func(d time.Duration) error {
		if d == 0 || d > time.Hour {
			return errors.New("over the ceiling")
		}
		return nil
	}
	for _, tt := range []struct{ in, errPart string }{
		{"profiles: {big: {limits: {max_memory_bytes: 68719476736}}}", `"big": invalid limits.max_memory_bytes`},
		{"profiles: {tiny: {limits: {max_memory_bytes: 1024}}}", "below the minimum"},
		{"profiles: {long: {shutdownAfterSeconds: 7200}}", `"long": shutdownAfterSeconds: over the ceiling`},
		{"profiles: {forever: {shutdownAfterSeconds: 0}}", "over the ceiling"},
	} {
		s, err := Parse([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(limits.Default(), limits.DefaultCeilings(), maxLife); err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: Validate: %v, want %q", tt.in, err, tt.errPart)
		}
	}
	s, _ := Parse([]byte(example))
	if err := s.Validate(limits.Default(), limits.DefaultCeilings(), maxLife); err != nil {
		t.Errorf("example: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "profiles.yaml")
	if err := os.WriteFile(p, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(p); err != nil || len(s.Names()) != 3 {
		t.Fatalf("Load: %v, %v", s, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{fifo, dir, filepath.Join(dir, "missing")} {
		if _, err := Load(bad); err == nil {
			t.Errorf("Load(%s) succeeded", bad)
		}
	}
	if err := os.WriteFile(p, []byte("profiles: {a: {runtime: ruby}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Load of a bad file: %v, want its path named", err)
	}
}

// FuzzParse: a profile file is outside input. Whatever it holds, Parse
// refuses it or returns at most MaxProfiles+1 profiles, each with a DNS
// label name, a known runtime and non-negative durations, default among
// them.
func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("profiles: {a: {limits: {timeout_ms: \"5\"}}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		names := s.Names()
		if len(names) > MaxProfiles+1 {
			t.Fatalf("%d profiles", len(names))
		}
		if _, err := s.Get(DefaultName); err != nil {
			t.Fatal("no default profile")
		}
		for _, n := range names {
			p, _ := s.Get(n)
			switch {
			case p.Name != n || n == "" || len(n) > 63:
				t.Fatalf("name %q", n)
			case p.Runtime != "" && p.Runtime != "goja" && p.Runtime != "node" && p.Runtime != "shell" && p.Runtime != "python":
				t.Fatalf("runtime %q", p.Runtime)
			case p.ShutdownAfter != nil && *p.ShutdownAfter < 0, p.IdleTimeout != nil && *p.IdleTimeout < 0:
				t.Fatalf("negative duration in %+v", p)
			}
		}
	})
}
