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
		{"memory ceiling over the budget", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, MemoryBudgetBytes: 1 << 30, MaxMemoryBytes: 2 << 30}
		}, "is over the memory budget 1Gi"},
		{"default memory over the ceiling", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, MemoryBudgetBytes: 256 << 20}
		}, "default memory limit 512Mi is over the memory ceiling 256Mi"},
		{"negative queue size", func(sb sandbox.Config) Config {
			return Config{Sandbox: sb, QueueSize: -2}
		}, "queue size -2"},
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

// TestMemoryCeilingWithinTheBudget: the memory ceiling defaults to the
// smaller of limits.DefaultCeilings' 8 GiB and the memory budget, and
// MaxMemoryBytes sets it; the server's budget is the one configured.
func TestMemoryCeilingWithinTheBudget(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		budget, max          int64
		wantCeil, wantBudget int64
	}{
		{"budget under 8Gi", 3 << 30, 0, 3 << 30, 3 << 30},
		{"budget over 8Gi", 20 << 30, 0, 8 << 30, 20 << 30},
		{"--max-memory", 20 << 30, 12 << 30, 12 << 30, 20 << 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Sandbox: validSandboxConfig(t), MemoryBudgetBytes: tt.budget, MaxMemoryBytes: tt.max})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Shutdown(0) }()
			if got := s.cfg.Ceilings.MemoryBytes; got != tt.wantCeil {
				t.Errorf("memory ceiling %d, want %d", got, tt.wantCeil)
			}
			if _, total := s.budget.Usage(); total != tt.wantBudget {
				t.Errorf("budget %d, want %d", total, tt.wantBudget)
			}
		})
	}
}
