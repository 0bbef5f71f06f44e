package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

func TestNewRejectsUnknownDefaultRuntime(t *testing.T) {
	_, err := New(Config{DefaultRuntime: "cobol"})
	if err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Fatalf("New(cobol) = %v", err)
	}
}

// validSandboxConfig is a sandbox configuration that passes Validate (a
// goja "binary" with an ELF header, a short state directory searchable by
// others) but whose sandboxes cannot start: nothing here runs one.
func validSandboxConfig(t *testing.T) sandbox.Config {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "efnew-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"execfarm-worker", sandbox.GojaBinaryName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("\x7fELF not really"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sandbox.Config{WorkerBinary: filepath.Join(dir, "execfarm-worker"), StateDir: filepath.Join(dir, "state"),
		IDs: sandbox.NewIDPool(3<<30, 0, 4)}
}

// TestFailedNewLeavesNoGoroutine: New starts its goroutines (the
// registry's sweeper, the warm pool's refill) only once nothing can fail
// any more, so a New that fails, at its first check or at its last step,
// leaves none behind.
func TestFailedNewLeavesNoGoroutine(t *testing.T) {
	used := metrics.New()
	// One Metrics serves one Server: its load is taken already, so New's
	// last step (RegisterLoad) fails.
	if err := used.RegisterLoad(func() metrics.Load { return metrics.Load{} }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  func(sandbox.Config) Config
		want string
	}{
		{"bad sandbox reuse", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, SandboxReuse: -1}
		}, "sandbox reuse -1"},
		{"reuse without a warm pool", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, SandboxReuse: 2}
		}, "needs a warm pool"},
		{"metrics taken, with a warm pool", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, WarmPool: 2, SandboxReuse: 3, Metrics: used}
		}, "supervisor: metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg(validSandboxConfig(t)))
			if err == nil {
				_ = s.Shutdown(0)
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
			goleak.VerifyNone(t, processGoroutines()...)
		})
	}
}
