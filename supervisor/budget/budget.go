package budget

import (
	"fmt"
	"sync"
)

// Budget is a total of bytes that holders take and give back. Safe for
// concurrent use; a nil *Budget admits everything and holds nothing.
type Budget struct {
	total int64

	mu       sync.Mutex
	held     int64
	reserved int64    // kept for the scheduler's queue head (Reserve)
	notify   []func() // OnRelease's, in registration order
}

// New returns a Budget of totalBytes; totalBytes < 1 is an error.
func New(totalBytes int64) (*Budget, error) {
	if totalBytes < 1 {
		return nil, fmt.Errorf("budget: total %d bytes < 1", totalBytes)
	}
	return &Budget{total: totalBytes}, nil
}

// TryAcquire takes n bytes if they fit in what is free beyond the bytes
// kept for the scheduler's queue head (held + reserved + n <= total; see
// Reserve) and returns nil; otherwise it takes nothing and returns an
// *Error (ErrTooLarge when n alone is over the total, ErrExhausted when
// it does not fit now). n <= 0 takes nothing and returns nil.
func (b *Budget) TryAcquire(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.total || b.held+b.reserved+n > b.total {
		return &Error{Asked: n, Held: b.held, Reserved: b.reserved, Total: b.total}
	}
	b.held += n
	return nil
}

// Reserve keeps n bytes of what is free for the one waiter the budget
// serves first, the scheduler's queue head, so that no TryAcquire takes
// the memory it waits for: TryAcquire then fits only in what is free
// beyond them, TryAcquireReserved in all that is free. The bytes stay
// free (Usage does not count them). Each call replaces the last; n <= 0
// keeps nothing. The scheduler sets it whenever its queue's head changes.
func (b *Budget) Reserve(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved = max(n, 0)
}

// TryAcquireReserved is TryAcquire for the waiter Reserve keeps bytes
// for: n fits when held + n <= total, the reserved bytes included. It
// leaves the reservation as it is (the caller sets the next one).
// Errors as TryAcquire's.
func (b *Budget) TryAcquireReserved(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.total || b.held+n > b.total {
		return &Error{Asked: n, Held: b.held, Total: b.total}
	}
	b.held += n
	return nil
}

// Fits reports whether n bytes alone are within the total (they may
// fit once the others' are released): nil, or an *Error wrapping
// ErrTooLarge.
func (b *Budget) Fits(n int64) error {
	if b == nil || n <= b.total {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return &Error{Asked: n, Held: b.held, Total: b.total}
}

// Release gives back n bytes that TryAcquire took, then calls every
// OnRelease function on the caller's goroutine, with no lock of b held.
// The caller must not hold a lock that an OnRelease function takes.
// n <= 0 does nothing. Releasing more than is held panics: it is a
// holder's bug that would let the host be overcommitted.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	if n > b.held {
		b.mu.Unlock()
		panic(fmt.Sprintf("budget: release of %d bytes with %d held", n, b.held))
	}
	b.held -= n
	notify := b.notify
	b.mu.Unlock()
	for _, f := range notify {
		f()
	}
}

// OnRelease registers f, called after every Release (see Release). Call
// it while setting up, before the Budget is shared.
func (b *Budget) OnRelease(f func()) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notify = append(b.notify[:len(b.notify):len(b.notify)], f)
}

// Usage returns the bytes held and the total; 0, 0 for a nil Budget.
func (b *Budget) Usage() (held, total int64) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.total
}
