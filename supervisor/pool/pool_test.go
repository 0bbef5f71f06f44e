package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/hashicorp/go-hclog"
)

// The pool's sandbox handling is exercised end to end in test/integration
// (TestWarmPool*); here, its matching rule.
func TestTakeOnlyMatchingSpec(t *testing.T) {
	spec := sandbox.Spec{Limits: cgroup.Limits{MemoryMaxBytes: 1 << 20}}
	p := &Pool{spec: spec, ready: make(chan *sandbox.Sandbox, 1), wake: make(chan struct{}, 1), log: hclog.NewNullLogger(),
		reuse: 1, taken: map[*sandbox.Sandbox]loan{}}
	sb := &sandbox.Sandbox{}
	p.ready <- sb
	other := spec
	other.WorkspaceBytes = 1
	if got := p.Take(other); got != nil {
		t.Fatal("a sandbox of another spec was handed out")
	}
	if got := p.Take(spec); got != sb {
		t.Fatalf("Take = %p, want %p", got, sb)
	}
	if got := p.Take(spec); got != nil {
		t.Fatal("one sandbox handed out twice")
	}
	if s := p.Stats(); s.Ready != 0 || s.InUse != 1 {
		t.Fatalf("Stats = %+v, want none ready, one in use", s)
	}
	if p.BeginReset(sb) {
		t.Fatal("a single-use pool lent its sandbox")
	}
	p.Discard(sb)
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("after Discard: Stats = %+v, want none in use", s)
	}
}

// TestTakeWaitsForASandboxBeingReset: with reuse, an execution's result
// is published before its sandbox is reset; a Take that finds none ready
// meanwhile waits for that sandbox rather than have a new one started
// (~25 ms of CPU against a few for the reset).
func TestTakeWaitsForASandboxBeingReset(t *testing.T) {
	spec := sandbox.Spec{}
	waiting := make(chan struct{}, 1)
	p := &Pool{spec: spec, ready: make(chan *sandbox.Sandbox, 1), wake: make(chan struct{}, 1), log: hclog.NewNullLogger(),
		reuse: 3, taken: map[*sandbox.Sandbox]loan{}, waiting: func() { waiting <- struct{}{} }, wait: time.Minute,
		prepare: func(context.Context, *sandbox.Sandbox) error { return nil }}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	defer p.cancel()
	sb := &sandbox.Sandbox{}
	p.ready <- sb
	if got := p.Take(spec); got != sb {
		t.Fatalf("Take = %p, want %p", got, sb)
	}
	if !p.BeginReset(sb) {
		t.Fatal("a sandbox with uses left is not reusable")
	}
	took := make(chan *sandbox.Sandbox)
	go func() { took <- p.Take(spec) }()
	select {
	case <-waiting:
	case got := <-took:
		t.Fatalf("Take = %p without waiting for the sandbox being reset", got)
	}
	p.Recycle(sb) // the reset is done
	if got := <-took; got != sb {
		t.Fatalf("Take = %p, want the reset sandbox %p", got, sb)
	}
	p.recycling.Wait()
	if s := p.Stats(); s.InUse != 1 || p.resettingN != 0 {
		t.Errorf("Stats = %+v, %d being reset; want it in use again, none being reset", s, p.resettingN)
	}
}

// TestCloseWhileStartsFail: with every start failing at once, the pool
// backs off without piling up starts, and Close returns.
func TestCloseWhileStartsFail(t *testing.T) {
	var mu sync.Mutex
	inFlight, most, calls := 0, 0, 0
	enough := make(chan struct{}) // closed at the 6th start: several back-off rounds
	start := func(ctx context.Context) (*sandbox.Sandbox, error) {
		mu.Lock()
		inFlight++
		calls++
		most = max(most, inFlight)
		if calls == 6 {
			close(enough)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		return nil, errors.New("no sandbox here")
	}
	p := New(4, 1, sandbox.Spec{}, start, func(context.Context, *sandbox.Sandbox) error { return nil }, hclog.NewNullLogger())
	// Wake it again and again while it backs off: each wake must not
	// start more than the pool's parallel starts.
	for range 200 {
		p.poke()
	}
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Fatal("fewer than 6 start attempts in 30 s")
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while starts kept failing")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 || most > p.parallel {
		t.Errorf("%d starts, at most %d at once; want some, at most %d", calls, most, p.parallel)
	}
}
