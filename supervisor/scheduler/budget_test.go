package scheduler

import (
	"context"
	"errors"
	"testing"

	"github.com/execfarm/execfarm/supervisor/budget"
)

func newBudgeted(t *testing.T, slots, queue int, total int64) (*Scheduler, *budget.Budget) {
	t.Helper()
	b, err := budget.New(total)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{MaxConcurrent: slots, QueueSize: queue, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func granted(tk *Ticket) bool {
	select {
	case <-tk.ready:
		return true
	default:
		return false
	}
}

// A ticket whose memory does not fit waits with a free slot, FIFO: a
// smaller one behind it waits too, and both are granted in order as
// memory comes back.
func TestBudgetHoldsTheQueueHead(t *testing.T) {
	s, b := newBudgeted(t, 4, 10, 100)
	first, err := s.Enqueue(60)
	if err != nil || !granted(first) {
		t.Fatalf("first: granted=%v err=%v", first != nil && granted(first), err)
	}
	big, _ := s.Enqueue(50)
	small, _ := s.Enqueue(10)
	if granted(big) || granted(small) {
		t.Fatalf("granted over the budget: big=%v small=%v", granted(big), granted(small))
	}
	if big.Position() != 1 || small.Position() != 2 {
		t.Fatalf("positions %d,%d want 1,2", big.Position(), small.Position())
	}
	first.Release()
	if !granted(big) || !granted(small) {
		t.Fatalf("after release: big=%v small=%v, want both granted", granted(big), granted(small))
	}
	if held, _ := b.Usage(); held != 60 {
		t.Fatalf("held %d, want 60", held)
	}
	big.Release()
	small.Release()
	small.Release()
	if held, _ := b.Usage(); held != 0 {
		t.Fatalf("held %d after release, want 0", held)
	}
}

// Memory given back by another holder of the budget (a session sandbox)
// wakes the queue.
func TestBudgetReleaseElsewhereWakesTheQueue(t *testing.T) {
	s, b := newBudgeted(t, 2, 10, 100)
	if err := b.TryAcquire(80); err != nil {
		t.Fatal(err)
	}
	tk, _ := s.Enqueue(50)
	if granted(tk) {
		t.Fatal("granted 50 with 80 of 100 held")
	}
	b.Release(80)
	if !granted(tk) {
		t.Fatal("not granted after the budget's release")
	}
	tk.Release()
}

// A waiter that gives up takes nothing with it: no budget held, no queue
// place, and the one behind it is granted when it alone was in the way.
func TestBudgetCancelledWaiterLeaksNothing(t *testing.T) {
	s, b := newBudgeted(t, 4, 10, 100)
	first, _ := s.Enqueue(40)
	head, _ := s.Enqueue(70)
	next, _ := s.Enqueue(30)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := head.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if !granted(next) {
		t.Fatal("the ticket behind a cancelled head was not granted")
	}
	if held, _ := b.Usage(); held != 70 {
		t.Fatalf("held %d, want 70 (40 + 30)", held)
	}
	first.Release()
	next.Release()
	if held, _ := b.Usage(); held != 0 {
		t.Fatalf("held %d after all released, want 0", held)
	}
	if r, q := s.Counts(); r != 0 || q != 0 {
		t.Fatalf("counts %d,%d want 0,0", r, q)
	}
}

// Granted while giving up: the slot and its memory are handed on.
func TestBudgetGrantedWhileCancelledIsReleased(t *testing.T) {
	s, b := newBudgeted(t, 1, 10, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Wait's select takes either case at random: run both.
	for i := 0; i < 32; i++ {
		tk, err := s.Enqueue(100)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Wait(ctx); err == nil {
			tk.Release()
		}
		if held, _ := b.Usage(); held != 0 {
			t.Fatalf("round %d: held %d, want 0", i, held)
		}
	}
}

// Memory over the whole budget is refused at once, never queued.
func TestBudgetTooLargeRefusedAtOnce(t *testing.T) {
	s, _ := newBudgeted(t, 1, 10, 100)
	if _, err := s.Enqueue(101); !errors.Is(err, budget.ErrTooLarge) {
		t.Fatalf("Enqueue(101) = %v, want budget.ErrTooLarge", err)
	}
	if _, q := s.Counts(); q != 0 {
		t.Fatalf("queued %d, want 0", q)
	}
}

// A session create (the budget's TryAcquire) cannot take the memory the
// queue's head waits for, whether the head waits for its memory or for a
// slot: a create that fits what is free but not what is free beyond the
// head's limit is refused, naming what is kept; one that fits beyond it
// is taken. Once the head is granted, or leaves, nothing is kept.
func TestBudgetCreateDoesNotOvertakeTheQueueHead(t *testing.T) {
	for _, tt := range []struct {
		name         string
		slots        int
		running      int64 // memory of the running ticket
		head         int64 // memory of the waiting head
		refused, fit int64 // creates that would fit what is free, and that fit beyond the head
	}{
		// 60 of 100 held: 40 free, of which none is beyond the head's 50.
		{name: "head waits for memory", slots: 4, running: 60, head: 50, refused: 30},
		// 10 of 100 held, every slot busy: 90 free, 40 beyond the head's.
		{name: "head waits for a slot", slots: 1, running: 10, head: 50, refused: 60, fit: 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, b := newBudgeted(t, tt.slots, 10, 100)
			first, err := s.Enqueue(tt.running)
			if err != nil || !granted(first) {
				t.Fatalf("first: %v", err)
			}
			head, err := s.Enqueue(tt.head)
			if err != nil || granted(head) {
				t.Fatalf("head: granted=%v err=%v, want waiting", head != nil && granted(head), err)
			}
			err = b.TryAcquire(tt.refused)
			var be *budget.Error
			if !errors.As(err, &be) || !errors.Is(err, budget.ErrExhausted) || be.Reserved != tt.head {
				t.Fatalf("create of %d with the head waiting for %d = %v, want ErrExhausted with %d kept", tt.refused, tt.head, err, tt.head)
			}
			if err := b.TryAcquire(tt.fit); err != nil {
				t.Fatalf("create of %d beyond the head's %d: %v", tt.fit, tt.head, err)
			}
			first.Release()
			if !granted(head) {
				t.Fatal("head not granted after the running ticket's release")
			}
			if held, _ := b.Usage(); held != tt.head+tt.fit {
				t.Fatalf("held %d, want %d", held, tt.head+tt.fit)
			}
			// Nothing waits: a create may take all that is free.
			if err := b.TryAcquire(100 - tt.head - tt.fit); err != nil {
				t.Fatalf("create with nothing queued: %v", err)
			}
			head.Release()
		})
	}
}

// A head that leaves the queue no longer holds its memory back.
func TestBudgetCancelledHeadKeepsNothing(t *testing.T) {
	s, b := newBudgeted(t, 4, 10, 100)
	first, _ := s.Enqueue(60)
	head, _ := s.Enqueue(50)
	if err := b.TryAcquire(40); err == nil {
		t.Fatal("create took the memory the head waits for")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := head.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
	if err := b.TryAcquire(40); err != nil {
		t.Fatalf("create after the head left: %v", err)
	}
	first.Release()
}

// A ticket that would wait and may not is refused naming what is short:
// with no queue, the memory budget when a slot is free (a *budget.Error,
// not ErrQueueFull) or the slots; with a full queue, the slots or the
// memory its head waits for.
func TestRefusalNamesTheCause(t *testing.T) {
	for _, tt := range []struct {
		name         string
		slots, queue int
		running      []int64 // tickets granted, then ones queued
		queued       []int64
		ask          int64
		memory       bool   // a *budget.Error wrapping ErrExhausted, else a *FullError
		want         string // in the message
	}{
		{name: "no queue, memory short", slots: 2, queue: 0, running: []int64{60}, ask: 50, memory: true,
			want: "budget: a memory limit of 50 bytes does not fit the node's memory budget of 100 bytes (--memory-budget): live sandboxes hold 60 bytes, 40 bytes is free"},
		{name: "no queue, slots busy", slots: 1, queue: 0, running: []int64{10}, ask: 10,
			want: "scheduler: all 1 execution slots are busy (--max-concurrent) and none may wait (--queue-size 0)"},
		{name: "queue full, slots busy", slots: 1, queue: 1, running: []int64{10}, queued: []int64{10}, ask: 10,
			want: "scheduler: execution queue full: 1 executions wait (--queue-size) for one of the 1 execution slots, all busy (--max-concurrent)"},
		{name: "queue full, head waits for memory", slots: 2, queue: 1, running: []int64{60}, queued: []int64{50}, ask: 10,
			want: "scheduler: execution queue full: 1 executions wait (--queue-size), the first for its memory limit of 50 bytes to fit the node's memory budget of 100 bytes (--memory-budget): live sandboxes hold 60 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newBudgeted(t, tt.slots, tt.queue, 100)
			var tickets []*Ticket
			for _, m := range append(append([]int64{}, tt.running...), tt.queued...) {
				tk, err := s.Enqueue(m)
				if err != nil {
					t.Fatalf("Enqueue(%d): %v", m, err)
				}
				tickets = append(tickets, tk)
			}
			defer func() {
				for _, tk := range tickets {
					tk.Release()
				}
			}()
			tk, err := s.Enqueue(tt.ask)
			if err == nil {
				tk.Release()
				t.Fatalf("Enqueue(%d) admitted", tt.ask)
			}
			var full *FullError
			switch {
			case tt.memory && (!errors.Is(err, budget.ErrExhausted) || errors.Is(err, ErrQueueFull)):
				t.Errorf("Enqueue(%d) = %v, want budget.ErrExhausted and not ErrQueueFull", tt.ask, err)
			case !tt.memory && !errors.As(err, &full):
				t.Errorf("Enqueue(%d) = %v, want a *FullError", tt.ask, err)
			case !tt.memory && !errors.Is(err, ErrQueueFull):
				t.Errorf("Enqueue(%d) = %v, does not wrap ErrQueueFull", tt.ask, err)
			}
			if err.Error() != tt.want {
				t.Errorf("message\n%s\nwant\n%s", err, tt.want)
			}
			if _, q := s.Counts(); q != len(tt.queued) {
				t.Errorf("queued %d, want %d", q, len(tt.queued))
			}
		})
	}
}
