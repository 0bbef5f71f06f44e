package pool

import (
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/hashicorp/go-hclog"
)

// The pool's sandbox handling is exercised end to end in test/integration
// (TestWarmPool*); here, its matching rule.
func TestTakeOnlyMatchingSpec(t *testing.T) {
	spec := sandbox.Spec{Limits: cgroup.Limits{MemoryMaxBytes: 1 << 20}}
	p := &Pool{spec: spec, ready: make(chan *sandbox.Sandbox, 1), wake: make(chan struct{}, 1), log: hclog.NewNullLogger(),
		reuse: 1, taken: map[*sandbox.Sandbox]bool{}}
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
	if p.Reusable(sb) {
		t.Fatal("a single-use pool lent its sandbox")
	}
	p.Discard(sb)
	if s := p.Stats(); s.InUse != 0 {
		t.Fatalf("after Discard: Stats = %+v, want none in use", s)
	}
}
