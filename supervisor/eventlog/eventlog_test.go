package eventlog

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func appendN(t *testing.T, l *Log[int], from, n int, size int64) {
	t.Helper()
	for i := from; i < from+n; i++ {
		off, err := l.Append(i, size)
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if off != int64(i) {
			t.Fatalf("Append(%d) gave offset %d, want %d", i, off, i)
		}
	}
}

// values checks that entries hold the values want..want+len-1 at offsets
// equal to their values: strictly increasing, no gaps.
func checkRun(t *testing.T, entries []Entry[int], want int) {
	t.Helper()
	for i, e := range entries {
		if e.Offset != int64(want+i) || e.Value != want+i {
			t.Fatalf("entry %d is offset %d value %d, want %d", i, e.Offset, e.Value, want+i)
		}
	}
}

func TestBounds(t *testing.T) {
	tests := []struct {
		name          string
		cfg           Config
		n             int
		size          int64
		first, next   int64
		held, dropped int64
		onDropTotal   int
	}{
		{name: "within both", cfg: Config{MaxEntries: 10, MaxBytes: 100}, n: 10, size: 10, first: 0, next: 10, held: 100},
		{name: "entries bound", cfg: Config{MaxEntries: 10, MaxBytes: 1 << 20}, n: 25, size: 1, first: 15, next: 25, held: 10, dropped: 15, onDropTotal: 15},
		{name: "bytes bound", cfg: Config{MaxEntries: 1000, MaxBytes: 100}, n: 30, size: 30, first: 27, next: 30, held: 90, dropped: 27, onDropTotal: 27},
		{name: "entry larger than the bound is held alone", cfg: Config{MaxEntries: 10, MaxBytes: 10}, n: 3, size: 50, first: 2, next: 3, held: 50, dropped: 2, onDropTotal: 2},
		{name: "defaults", cfg: Config{}, n: DefaultMaxEntries + 5, size: 1, first: 5, next: DefaultMaxEntries + 5, held: DefaultMaxEntries, dropped: 5, onDropTotal: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			total := 0
			tt.cfg.OnDrop = func(n int) { mu.Lock(); total += n; mu.Unlock() }
			l := New[int](tt.cfg)
			for i := range tt.n {
				if _, err := l.Append(i, tt.size); err != nil {
					t.Fatal(err)
				}
				if maxB := tt.cfg.MaxBytes; maxB > 0 && tt.size <= maxB && l.HeldBytes() > maxB {
					t.Fatalf("after %d appends %d bytes held, over the bound %d", i+1, l.HeldBytes(), maxB)
				}
			}
			first, next, closed := l.Bounds()
			if first != tt.first || next != tt.next || closed {
				t.Fatalf("Bounds = %d, %d, %v; want %d, %d, false", first, next, closed, tt.first, tt.next)
			}
			if got := l.HeldBytes(); got != tt.held {
				t.Errorf("HeldBytes = %d, want %d", got, tt.held)
			}
			if got := l.Dropped(); got != tt.dropped {
				t.Errorf("Dropped = %d, want %d", got, tt.dropped)
			}
			if total != tt.onDropTotal {
				t.Errorf("OnDrop total %d, want %d", total, tt.onDropTotal)
			}
			entries, _, err := l.Read(first, int(next-first))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(entries)) != next-first {
				t.Fatalf("Read held %d entries, want %d", len(entries), next-first)
			}
			checkRun(t, entries, int(first))
		})
	}
}

func TestRead(t *testing.T) {
	l := New[int](Config{MaxEntries: 8})
	appendN(t, l, 0, 12, 1) // holds 4..11
	page, next, err := l.Read(5, 3)
	if err != nil || next != 8 {
		t.Fatalf("Read(5, 3) = next %d, %v; want 8", next, err)
	}
	checkRun(t, page, 5)
	if len(page) != 3 {
		t.Fatalf("Read(5, 3) gave %d entries", len(page))
	}
	if page, next, err := l.Read(12, 0); err != nil || len(page) != 0 || next != 12 {
		t.Fatalf("Read at the end = %d entries, next %d, %v; want none, 12, nil", len(page), next, err)
	}
	page, next, err = l.Read(4, 0)
	if err != nil || len(page) != 8 || next != 12 {
		t.Fatalf("Read(4, 0) = %d entries, next %d, %v", len(page), next, err)
	}
	var de *DroppedError
	if _, _, err := l.Read(3, 1); !errors.As(err, &de) || de.Offset != 3 || de.First != 4 || !errors.Is(err, ErrDropped) {
		t.Fatalf("Read of a dropped offset: %v, want *DroppedError{3, 4}", err)
	}
	var ae *AheadError
	if _, _, err := l.Read(13, 1); !errors.As(err, &ae) || ae.Next != 12 || !errors.Is(err, ErrOffsetAhead) {
		t.Fatalf("Read past the end: %v, want *AheadError{13, 12}", err)
	}
	if _, _, err := l.Read(-1, 1); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("Read(-1): %v, want ErrInvalidOffset", err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	l := New[int](Config{})
	appendN(t, l, 0, 2, 1)
	l.Close()
	l.Close()
	if _, err := l.Append(2, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if page, _, err := l.Read(0, 0); err != nil || len(page) != 2 {
		t.Fatalf("Read after Close: %d entries, %v", len(page), err)
	}
}

// collect runs a subscription to its end in a goroutine; the result
// arrives on the returned channel.
type subResult struct {
	entries []Entry[int]
	err     error
}

func collect(ctx context.Context, l *Log[int], from int64) <-chan subResult {
	out := make(chan subResult, 1)
	go func() {
		var r subResult
		for e, err := range l.Subscribe(ctx, from) {
			if err != nil {
				r.err = err
				break
			}
			r.entries = append(r.entries, e)
		}
		out <- r
	}()
	return out
}

// TestSubscribeHistoryThenLive: a subscriber from 0 gets what was written
// before it subscribed, then what is written after, in order and without
// gaps, and ends when the log is closed.
func TestSubscribeHistoryThenLive(t *testing.T) {
	l := New[int](Config{})
	appendN(t, l, 0, 3*PageEntries+7, 1) // history longer than a page
	res := collect(context.Background(), l, 0)
	appendN(t, l, 3*PageEntries+7, 100, 1)
	l.Close()
	r := <-res
	if r.err != nil {
		t.Fatalf("subscription ended with %v", r.err)
	}
	if len(r.entries) != 3*PageEntries+107 {
		t.Fatalf("got %d entries, want %d", len(r.entries), 3*PageEntries+107)
	}
	checkRun(t, r.entries, 0)
}

// TestSubscribeWaitsForLiveEntries: a subscriber at the end blocks until
// the next append, which it then gets.
func TestSubscribeWaitsForLiveEntries(t *testing.T) {
	l := New[int](Config{})
	appendN(t, l, 0, 2, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Entry[int], 1) // a wrong early delivery lands here
	done := make(chan error, 1)
	go func() {
		for e, err := range l.Subscribe(ctx, 2) {
			if err != nil {
				done <- err
				return
			}
			got <- e
		}
		done <- nil
	}()
	// Wait until the subscriber has read the log and is waiting for the
	// next append (it has asked for a notification), then check it got
	// nothing.
	for waiting := false; !waiting; {
		l.mu.Lock()
		waiting = l.notify != nil
		l.mu.Unlock()
		runtime.Gosched()
	}
	select {
	case e := <-got:
		t.Fatalf("subscriber at the end got offset %d before any append", e.Offset)
	default:
	}
	appendN(t, l, 2, 1, 1)
	if e := <-got; e.Offset != 2 {
		t.Fatalf("live entry at offset %d, want 2", e.Offset)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("subscription ended with %v, want context.Canceled", err)
	}
}

func TestSubscribeFromDroppedOrAhead(t *testing.T) {
	l := New[int](Config{MaxEntries: 4})
	appendN(t, l, 0, 10, 1)
	var de *DroppedError
	if r := <-collect(context.Background(), l, 2); !errors.As(r.err, &de) || de.First != 6 || len(r.entries) != 0 {
		t.Fatalf("subscribe from a dropped offset: %d entries, %v; want *DroppedError with First 6", len(r.entries), r.err)
	}
	var ae *AheadError
	if r := <-collect(context.Background(), l, 11); !errors.As(r.err, &ae) {
		t.Fatalf("subscribe past the end: %v, want *AheadError", r.err)
	}
}

// TestFromTheStartAfterDrops: offset 0 is the start of the log, not an
// entry: once the bounds dropped entries, Read and Subscribe from 0 begin
// at the first entry held (its offset says how many went before) instead
// of failing, while any other dropped offset still fails.
func TestFromTheStartAfterDrops(t *testing.T) {
	l := New[int](Config{MaxEntries: 4})
	appendN(t, l, 0, 10, 1)
	page, next, err := l.Read(0, 2)
	if err != nil || next != 8 {
		t.Fatalf("Read(0, 2) after drops = %d entries, next %d, %v; want 2 from 6, next 8", len(page), next, err)
	}
	checkRun(t, page, 6)
	l.Close()
	r := <-collect(context.Background(), l, 0)
	if r.err != nil || len(r.entries) != 4 {
		t.Fatalf("Subscribe(0) after drops = %d entries, %v; want 4 from 6", len(r.entries), r.err)
	}
	checkRun(t, r.entries, 6)
	var de *DroppedError
	if _, _, err := l.Read(1, 0); !errors.As(err, &de) || de.First != 6 {
		t.Fatalf("Read(1) after drops: %v, want *DroppedError with First 6", err)
	}
	// An empty log read from 0 is at its end, at its first offset.
	empty := New[int](Config{})
	if page, next, err := empty.Read(0, 0); err != nil || len(page) != 0 || next != 0 {
		t.Fatalf("Read(0) of an empty log = %d entries, next %d, %v", len(page), next, err)
	}
}

// TestSlowSubscriberIsCutOff: a subscriber that stops reading never holds
// the writer up; once the entries it needs next are dropped it gets a
// *DroppedError naming the first offset held, after the entries of the
// page it had already taken, and nothing is skipped silently.
func TestSlowSubscriberIsCutOff(t *testing.T) {
	l := New[int](Config{MaxEntries: 16})
	appendN(t, l, 0, 4, 1)
	stalled := make(chan struct{})
	resume := make(chan struct{})
	res := make(chan subResult, 1)
	go func() {
		var r subResult
		for e, err := range l.Subscribe(context.Background(), 0) {
			if err != nil {
				r.err = err
				break
			}
			r.entries = append(r.entries, e)
			if e.Offset == 0 {
				close(stalled)
				<-resume // the subscriber stops reading here
			}
		}
		res <- r
	}()
	<-stalled
	// The writer goes on while the subscriber is stalled: 1000 appends
	// complete (a writer that waited for the subscriber would block here
	// forever, and the test would time out).
	appendN(t, l, 4, 1000, 1)
	close(resume)
	r := <-res
	var de *DroppedError
	if !errors.As(r.err, &de) {
		t.Fatalf("stalled subscriber ended with %v, want *DroppedError", r.err)
	}
	// It delivered the page it held (offsets 0..3), then needed 4, which
	// is gone: the log holds 988..1003.
	if de.Offset != 4 || de.First != 988 {
		t.Fatalf("DroppedError{Offset %d, First %d}, want {4, 988}", de.Offset, de.First)
	}
	if len(r.entries) != 4 {
		t.Fatalf("delivered %d entries before the cut, want 4", len(r.entries))
	}
	checkRun(t, r.entries, 0)
}

// TestConcurrentWritersAndSubscribers: under -race, entries appended by
// several goroutines reach every subscriber in offset order without gaps,
// and each subscriber ends when the log closes.
func TestConcurrentWritersAndSubscribers(t *testing.T) {
	const writers, perWriter, subscribers = 4, 500, 4
	l := New[int](Config{MaxEntries: writers * perWriter})
	var subs []<-chan subResult
	for range subscribers {
		subs = append(subs, collect(context.Background(), l, 0))
	}
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range perWriter {
				if _, err := l.Append(i, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.Close()
	for _, s := range subs {
		r := <-s
		if r.err != nil {
			t.Fatalf("subscription: %v", r.err)
		}
		if len(r.entries) != writers*perWriter {
			t.Fatalf("subscriber got %d entries, want %d", len(r.entries), writers*perWriter)
		}
		for i, e := range r.entries {
			if e.Offset != int64(i) {
				t.Fatalf("entry %d has offset %d", i, e.Offset)
			}
		}
	}
}

// FuzzRead: whatever the bounds, the appends and the offset a client asks
// for, Read answers entries in order from exactly that offset (from the
// first held for 0, the start of the log), or one of its three errors,
// each for its own case.
func FuzzRead(f *testing.F) {
	f.Add(uint16(10), uint16(25), int64(3), int64(5), 2)
	f.Add(uint16(1), uint16(1), int64(0), int64(0), 0)
	f.Add(uint16(100), uint16(7), int64(1), int64(8), -1)
	f.Fuzz(func(t *testing.T, maxEntries, n uint16, size, from int64, limit int) {
		l := New[int](Config{MaxEntries: int(maxEntries%512) + 1, MaxBytes: 1024})
		size = size % 2048
		for i := range int(n % 2048) {
			if _, err := l.Append(i, size); err != nil {
				t.Fatal(err)
			}
		}
		first, next, _ := l.Bounds()
		entries, got, err := l.Read(from, limit%1024)
		switch {
		case from == 0:
			if err != nil || got != first+int64(len(entries)) || got > next {
				t.Fatalf("Read(0) with first %d: %d entries, next %d, %v", first, len(entries), got, err)
			}
			checkRun(t, entries, int(first))
		case from < 0:
			if !errors.Is(err, ErrInvalidOffset) {
				t.Fatalf("Read(%d): %v, want ErrInvalidOffset", from, err)
			}
		case from < first:
			var de *DroppedError
			if !errors.As(err, &de) || de.First != first {
				t.Fatalf("Read(%d) with first %d: %v", from, first, err)
			}
		case from > next:
			if !errors.Is(err, ErrOffsetAhead) {
				t.Fatalf("Read(%d) with next %d: %v", from, next, err)
			}
		default:
			if err != nil {
				t.Fatalf("Read(%d) in [%d, %d]: %v", from, first, next, err)
			}
			if got != from+int64(len(entries)) || got > next {
				t.Fatalf("Read(%d) = %d entries, next %d (log next %d)", from, len(entries), got, next)
			}
			checkRun(t, entries, int(from))
		}
	})
}
