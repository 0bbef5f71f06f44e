package scheduler

import (
	"context"
	"fmt"
	"sync"

	"github.com/execfarm/execfarm/supervisor/budget"
)

// Config sizes a Scheduler.
type Config struct {
	// MaxConcurrent is the number of slots; must be >= 1.
	MaxConcurrent int
	// QueueSize is how many tickets may wait for a slot; 0 = none may
	// wait (every submission beyond the slots is refused).
	QueueSize int
	// Budget is the node's memory budget, shared with the session
	// manager: a ticket is granted its slot only once its memory
	// (Enqueue's memoryBytes) fits too, and gives both back on Release;
	// nil = slots alone.
	Budget *budget.Budget
}

// Scheduler hands out slots in FIFO order, each with the memory of its
// ticket taken from the budget. Safe for concurrent use.
//
// Lock order: Scheduler.mu, then the budget's; the budget is released
// with Scheduler.mu not held, since its release wakes the scheduler
// (grant). The budget's reservation (budget.Reserve) is set only with
// Scheduler.mu held, to the memory of the queue's head.
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
	memory  int64         // bytes of the budget the slot holds
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
	s := &Scheduler{cfg: cfg}
	cfg.Budget.OnRelease(s.grant)
	return s, nil
}

// Enqueue admits a submission whose sandbox's memory limit is
// memoryBytes (0 = none taken from the budget: a sandbox counted by
// whoever holds it). The ticket either holds a slot and its memory at
// once or waits in the queue: the head of the queue is granted when a
// slot is free and its memory fits the budget, and no ticket passes it;
// while it waits, its memory is kept for it (budget.Reserve), so that
// no session create takes it.
// Errors: a *budget.Error wrapping budget.ErrTooLarge when memoryBytes
// alone is over the whole budget (it would wait forever); with QueueSize
// 0, a *budget.Error wrapping budget.ErrExhausted when a slot is free
// but memoryBytes does not fit the budget now (memory, not a slot, is
// short); else a *FullError (wrapping ErrQueueFull) when the ticket
// would wait and the queue is full.
func (s *Scheduler) Enqueue(memoryBytes int64) (*Ticket, error) {
	if err := s.cfg.Budget.Fits(memoryBytes); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &Ticket{s: s, ready: make(chan struct{}), memory: memoryBytes}
	if s.running < s.cfg.MaxConcurrent && len(s.queue) == 0 {
		err := s.cfg.Budget.TryAcquire(memoryBytes)
		if err == nil {
			s.running++
			t.granted = true
			close(t.ready)
			return t, nil
		}
		if s.cfg.QueueSize == 0 {
			return nil, err // it cannot wait for the memory
		}
	}
	if len(s.queue) >= s.cfg.QueueSize {
		return nil, s.fullLocked()
	}
	s.queue = append(s.queue, t)
	s.reserveLocked()
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
	// Granted while we were giving up: the slot is handed on.
	t.Release()
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

// Release gives the slot and its memory back (or leaves the queue).
// Idempotent.
func (t *Ticket) Release() {
	t.s.mu.Lock()
	if !t.granted {
		t.s.removeLocked(t)
		// The next may fit the memory its predecessor waited for.
		t.s.grantLocked()
		t.s.mu.Unlock()
		return
	}
	if t.done {
		t.s.mu.Unlock()
		return
	}
	t.done = true
	t.s.running--
	t.s.grantLocked()
	t.s.mu.Unlock()
	// Wakes this scheduler (grant) with its lock not held.
	t.s.cfg.Budget.Release(t.memory)
}

// grant grants the queue's head what is free: the budget's release calls
// it.
func (s *Scheduler) grant() {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// grantLocked grants the queue's head, and the next, while a slot is
// free and the head's memory fits (what Reserve keeps for it included),
// then keeps the memory of the new head (reserveLocked).
func (s *Scheduler) grantLocked() {
	defer s.reserveLocked()
	for s.running < s.cfg.MaxConcurrent && len(s.queue) > 0 {
		t := s.queue[0]
		if s.cfg.Budget.TryAcquireReserved(t.memory) != nil {
			return // FIFO: the head waits for memory, and so do the rest
		}
		s.queue = s.queue[1:]
		s.running++
		t.granted = true
		close(t.ready)
	}
}

// reserveLocked keeps the memory of the queue's head in the budget
// (budget.Reserve), whether it waits for a slot or for memory, so that
// no session create takes what the head waits for; none when the queue
// is empty.
func (s *Scheduler) reserveLocked() {
	var n int64
	if len(s.queue) > 0 {
		n = s.queue[0].memory
	}
	s.cfg.Budget.Reserve(n)
}

// fullLocked describes the full queue: why its tickets wait.
func (s *Scheduler) fullLocked() *FullError {
	e := &FullError{Queued: len(s.queue), QueueSize: s.cfg.QueueSize, Running: s.running, MaxConcurrent: s.cfg.MaxConcurrent}
	if len(s.queue) > 0 {
		e.HeadMemoryBytes = s.queue[0].memory
	}
	e.HeldBytes, e.BudgetBytes = s.cfg.Budget.Usage()
	return e
}

// Counts returns the tickets holding a slot and the tickets queued.
func (s *Scheduler) Counts() (running, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.queue)
}
