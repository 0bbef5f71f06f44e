package eventlog

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxEntries is the default bound on entries held.
	DefaultMaxEntries = 4096
	// DefaultMaxBytes is the default bound on payload bytes held (the
	// sum of the entries' sizes): 2 MiB.
	DefaultMaxBytes = 2 << 20
	// PageEntries is how many entries a subscription takes from the log
	// at once (under its lock), and so the most it holds at a time.
	PageEntries = 256
)

// Config bounds a Log.
type Config struct {
	// MaxEntries is the most entries held; 0 = DefaultMaxEntries.
	MaxEntries int
	// MaxBytes is the most payload bytes held, as measured by Append's
	// size argument; 0 = DefaultMaxBytes. The newest entry is kept even
	// when it alone is larger.
	MaxBytes int64
	// OnDrop, if set, is called with the number of entries an Append
	// dropped to stay within the bounds, from the appending goroutine,
	// without the log's lock held (metrics).
	OnDrop func(n int)
	// Now returns the time stamped on entries; nil = time.Now.
	Now func() time.Time
}

// Entry is one event in a Log.
type Entry[T any] struct {
	// Offset is the entry's place in the log: the previous entry's plus
	// one, the first entry's 0.
	Offset int64
	// Time is when it was appended.
	Time time.Time
	// Value is the event. Readers share it: it must not change once
	// appended.
	Value T
	// Size is what the entry counts against Config.MaxBytes, bytes.
	Size int64
}

// Log is a bounded, ordered event log. Its methods are safe for
// concurrent use.
type Log[T any] struct {
	maxEntries int
	maxBytes   int64
	onDrop     func(int)
	now        func() time.Time

	mu      sync.Mutex
	buf     []Entry[T] // ring: n entries from head, grown up to maxEntries
	head    int
	n       int
	first   int64 // offset of the entry at head
	bytes   int64 // sum of the held entries' sizes
	dropped int64 // entries dropped so far
	closed  bool
	notify  chan struct{} // closed and cleared on every append and on Close; nil when nobody waits
}

// New returns an empty log bounded by cfg.
func New[T any](cfg Config) *Log[T] {
	l := &Log[T]{maxEntries: cfg.MaxEntries, maxBytes: cfg.MaxBytes, onDrop: cfg.OnDrop, now: cfg.Now}
	if l.maxEntries <= 0 {
		l.maxEntries = DefaultMaxEntries
	}
	if l.maxBytes <= 0 {
		l.maxBytes = DefaultMaxBytes
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Append adds v, which counts size bytes against the bound, as the next
// entry and returns its offset. It drops the oldest entries as the bounds
// require and never waits for a reader. After Close it returns ErrClosed.
func (l *Log[T]) Append(v T, size int64) (int64, error) {
	size = max(size, 0)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	dropped := 0
	for l.n > 0 && (l.n >= l.maxEntries || l.bytes+size > l.maxBytes) {
		l.dropOldestLocked()
		dropped++
	}
	if l.n == len(l.buf) {
		l.growLocked()
	}
	off := l.first + int64(l.n)
	l.buf[(l.head+l.n)%len(l.buf)] = Entry[T]{Offset: off, Time: l.now(), Value: v, Size: size}
	l.n++
	l.bytes += size
	l.wakeLocked()
	l.mu.Unlock()
	if dropped > 0 && l.onDrop != nil {
		l.onDrop(dropped)
	}
	return off, nil
}

func (l *Log[T]) dropOldestLocked() {
	l.bytes -= l.buf[l.head].Size
	l.buf[l.head] = Entry[T]{} // let the value go
	l.head = (l.head + 1) % len(l.buf)
	l.n--
	l.first++
	l.dropped++
}

// growLocked doubles the ring (from 16, up to maxEntries), keeping order.
func (l *Log[T]) growLocked() {
	size := min(max(2*len(l.buf), 16), l.maxEntries)
	buf := make([]Entry[T], size)
	for i := range l.n {
		buf[i] = l.buf[(l.head+i)%len(l.buf)]
	}
	l.buf, l.head = buf, 0
}

// Close ends the log: Append fails from now on, and subscriptions end once
// they have delivered the last entry. Entries stay readable. Idempotent.
func (l *Log[T]) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.wakeLocked()
}

// Bounds returns the first offset held, the next offset to be written
// (first == next when the log holds nothing), and whether the log is
// closed.
func (l *Log[T]) Bounds() (first, next int64, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, l.first + int64(l.n), l.closed
}

// Dropped returns how many entries the bounds have dropped so far.
func (l *Log[T]) Dropped() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// HeldBytes returns the payload bytes held (the sum of the entries' sizes).
func (l *Log[T]) HeldBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// Read returns up to limit entries (0 or less: PageEntries) from offset
// from on, and the offset to read next. Offset 0 is the start of the log:
// reading from it begins at the first entry held, whatever was dropped
// (the first entry's Offset says how many). At the end it returns no
// entries and next == from (the first offset held, from 0). Errors:
// ErrInvalidOffset (wrapped) for a negative offset, a *DroppedError when
// from (not 0) is no longer held, an *AheadError when from is past the
// next offset to be written.
func (l *Log[T]) Read(from int64, limit int) (entries []Entry[T], next int64, err error) {
	if limit <= 0 {
		limit = PageEntries
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	entries, start, err := l.pageLocked(from, limit)
	return entries, start + int64(len(entries)), err
}

// pageLocked copies up to limit entries from offset from, and returns
// the offset they start at: from, or the first offset held for 0.
func (l *Log[T]) pageLocked(from int64, limit int) ([]Entry[T], int64, error) {
	next := l.first + int64(l.n)
	switch {
	case from < 0:
		return nil, from, fmt.Errorf("%w: %d", ErrInvalidOffset, from)
	case from == 0:
		from = l.first // the start of the log: what it still holds
	case from < l.first:
		return nil, from, &DroppedError{Offset: from, First: l.first}
	case from > next:
		return nil, from, &AheadError{Offset: from, Next: next}
	}
	k := int(min(next-from, int64(limit)))
	if k == 0 {
		return nil, from, nil
	}
	out := make([]Entry[T], k)
	start := int(from - l.first)
	for i := range k {
		out[i] = l.buf[(l.head+start+i)%len(l.buf)]
	}
	return out, from, nil
}

// Subscribe returns an iterator over the entries from offset from on: the
// history first, then new entries as they are appended, until the log is
// closed and everything up to its end was delivered (the iterator then
// simply ends). From 0, the start of the log, it begins at the first
// entry held when it reads (as Read). It yields a *DroppedError and ends
// when the next entry it needs is no longer held, whether from (not 0)
// was dropped already or the subscriber fell behind; an *AheadError (or
// ErrInvalidOffset) for an offset past the end (or negative); and
// ctx.Err() when ctx ends first.
//
// The iterator reads the log under its lock a page (PageEntries) at a
// time and yields outside it: the writer never waits for it.
func (l *Log[T]) Subscribe(ctx context.Context, from int64) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		next := from
		for {
			if err := ctx.Err(); err != nil {
				yield(Entry[T]{}, err)
				return
			}
			l.mu.Lock()
			page, start, err := l.pageLocked(next, PageEntries)
			next = start
			ended := l.closed && err == nil && next+int64(len(page)) == l.first+int64(l.n)
			var wake chan struct{}
			if err == nil && len(page) == 0 && !ended {
				if l.notify == nil {
					l.notify = make(chan struct{})
				}
				wake = l.notify
			}
			l.mu.Unlock()
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			next += int64(len(page))
			if ended {
				return
			}
			if wake != nil {
				select {
				case <-wake:
				case <-ctx.Done():
				}
			}
		}
	}
}

func (l *Log[T]) wakeLocked() {
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
}
