package worker

import (
	"sync"
	"time"

	"github.com/execfarm/execfarm/proto/workerv1"
)

// phases records the worker's start-up phases (Worker.Startup): each mark
// ends the phase that began at the previous one.
type phases struct {
	mu   sync.Mutex
	last time.Time
	list []*workerv1.Phase
}

// begin starts the clock at t.
func (p *phases) begin(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = t
}

// mark ends phase name now.
func (p *phases) mark(name string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, &workerv1.Phase{Name: name, Micros: now.Sub(p.last).Microseconds()})
	p.last = now
}

// snapshot returns the phases recorded so far.
func (p *phases) snapshot() []*workerv1.Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*workerv1.Phase(nil), p.list...)
}
