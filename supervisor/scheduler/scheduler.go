package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrQueueFull is returned by Enqueue when QueueSize tickets already wait.
var ErrQueueFull = errors.New("scheduler: queue full")

// Config sizes a Scheduler.
type Config struct {
	// MaxConcurrent is the number of slots; must be >= 1.
	MaxConcurrent int
	// QueueSize is how many tickets may wait for a slot; 0 = none may
	// wait (every submission beyond the slots is refused).
	QueueSize int
}

// Scheduler hands out slots in FIFO order. Safe for concurrent use.
type Scheduler struct {
	cfg     Config
	mu      sync.Mutex
	running int
	queue   []*Ticket
}

// Ticket is one admitted submission: waiting in the queue, then holding a
// slot until Release.
type Ticket struct {
	s       *Scheduler
	ready   chan struct{} // closed when the ticket got its slot
	granted bool
	done    bool
}

// New returns a Scheduler; MaxConcurrent < 1 or QueueSize < 0 is an error.
func New(cfg Config) (*Scheduler, error) {
	if cfg.MaxConcurrent < 1 {
		return nil, fmt.Errorf("scheduler: MaxConcurrent %d < 1", cfg.MaxConcurrent)
	}
	if cfg.QueueSize < 0 {
		return nil, fmt.Errorf("scheduler: QueueSize %d < 0", cfg.QueueSize)
	}
	return &Scheduler{cfg: cfg}, nil
}

// Enqueue admits a submission. The ticket either holds a slot at once or
// waits in the queue; ErrQueueFull when the queue is full.
func (s *Scheduler) Enqueue() (*Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &Ticket{s: s, ready: make(chan struct{})}
	if s.running < s.cfg.MaxConcurrent && len(s.queue) == 0 {
		s.running++
		t.granted = true
		close(t.ready)
		return t, nil
	}
	if len(s.queue) >= s.cfg.QueueSize {
		return nil, ErrQueueFull
	}
	s.queue = append(s.queue, t)
	return t, nil
}

// Wait blocks until t holds a slot or ctx ends; on ctx's end t leaves the
// queue (its place is freed) and ctx.Err() is returned.
func (t *Ticket) Wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.granted {
		// Granted while we were giving up: hand the slot on.
		t.s.releaseLocked(t)
		return ctx.Err()
	}
	t.s.removeLocked(t)
	return ctx.Err()
}

// Position returns 1 for the next ticket to run, 2 for the one after...,
// and 0 once the ticket holds a slot or has left.
func (t *Ticket) Position() int {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	for i, q := range t.s.queue {
		if q == t {
			return i + 1
		}
	}
	return 0
}

// Release gives the slot back (or leaves the queue). Idempotent.
func (t *Ticket) Release() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.granted {
		t.s.releaseLocked(t)
		return
	}
	t.s.removeLocked(t)
}

func (s *Scheduler) releaseLocked(t *Ticket) {
	if t.done {
		return
	}
	t.done = true
	s.running--
	s.grantLocked()
}

func (s *Scheduler) removeLocked(t *Ticket) {
	if t.done {
		return
	}
	t.done = true
	for i, q := range s.queue {
		if q == t {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
}

func (s *Scheduler) grantLocked() {
	for s.running < s.cfg.MaxConcurrent && len(s.queue) > 0 {
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.running++
		t.granted = true
		close(t.ready)
	}
}

// Counts returns the tickets holding a slot and the tickets queued.
func (s *Scheduler) Counts() (running, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.queue)
}
