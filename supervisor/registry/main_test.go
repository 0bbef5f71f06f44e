package registry

import (
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// fakeClock is a manually advanced clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newExec returns a new execution of a fresh registry with the given cap.
func newExec(t *testing.T, maxOutputBytes int64) *Execution {
	t.Helper()
	return New(Config{}).Create(Meta{CodePreview: "x", MaxOutputBytes: maxOutputBytes})
}

func mustRead(t *testing.T, e *Execution, s Stream, off int64) (string, int64, bool) {
	t.Helper()
	d, next, gap, err := e.Read(s, off)
	if err != nil {
		t.Fatalf("Read(%v, %d): %v", s, off, err)
	}
	return string(d), next, gap
}

func completed() Result {
	return Result{State: StateCompleted, Reason: ReasonExited, Success: true}
}
