package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestFIFOPositionsAndFull(t *testing.T) {
	s, err := New(Config{MaxConcurrent: 2, QueueSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	var tickets []*Ticket
	for i := 0; i < 5; i++ {
		tk, err := s.Enqueue(0)
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
		tickets = append(tickets, tk)
	}
	if _, err := s.Enqueue(0); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("6th enqueue: got %v, want ErrQueueFull", err)
	}
	for i, want := range []int{0, 0, 1, 2, 3} {
		if got := tickets[i].Position(); got != want {
			t.Errorf("ticket %d position = %d, want %d", i, got, want)
		}
	}
	tickets[0].Release()
	if err := tickets[2].Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := tickets[3].Position(); got != 1 {
		t.Errorf("after release, ticket 3 position = %d, want 1", got)
	}
	r, q := s.Counts()
	if r != 2 || q != 2 {
		t.Errorf("counts = %d,%d want 2,2", r, q)
	}
}

func TestWaitCancelledFreesPlace(t *testing.T) {
	s, _ := New(Config{MaxConcurrent: 1, QueueSize: 1})
	first, _ := s.Enqueue(0)
	waiting, _ := s.Enqueue(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waiting.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if _, q := s.Counts(); q != 0 {
		t.Fatalf("queued = %d after cancel, want 0", q)
	}
	next, err := s.Enqueue(0)
	if err != nil {
		t.Fatalf("enqueue after cancel: %v", err)
	}
	first.Release()
	if err := next.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Counts(); r != 1 {
		t.Fatalf("running = %d, want 1", r)
	}
}

func TestConcurrentNeverExceedsSlots(t *testing.T) {
	const slots = 3
	s, _ := New(Config{MaxConcurrent: slots, QueueSize: 1000})
	var mu sync.Mutex
	cur, peak := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := s.Enqueue(0)
			if err != nil {
				t.Error(err)
				return
			}
			if err := tk.Wait(context.Background()); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			cur++
			if cur > peak {
				peak = cur
			}
			mu.Unlock()
			mu.Lock()
			cur--
			mu.Unlock()
			tk.Release()
			tk.Release() // idempotent
		}()
	}
	wg.Wait()
	if peak > slots {
		t.Fatalf("peak concurrency %d > %d slots", peak, slots)
	}
	if r, q := s.Counts(); r != 0 || q != 0 {
		t.Fatalf("counts after all released = %d,%d", r, q)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{MaxConcurrent: 0}, {MaxConcurrent: 1, QueueSize: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error", c)
		}
	}
}
