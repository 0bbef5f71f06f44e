package session

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// MaxStdinBuffer is how many bytes of an exec's standard input wait, at
// most, for the program to read them; a write that does not fit waits for
// room. It is also the largest write (WriteStdin's data).
//
// One write at a time may wait, per exec: while it does, another is
// refused with ErrStdinBusy. A waiting write holds its request (up to
// MaxStdinBuffer bytes) in the supervisor's memory, so the bound makes an
// exec's standard input cost at most 2 × MaxStdinBuffer, however many
// calls a client makes (red-team F11: 800 concurrent writes to an exec
// that never read took the supervisor from 36 MB to 959 MB).
const MaxStdinBuffer = 1 << 20

// MaxSandboxStdin is how many bytes of standard input the execs of one
// sandbox hold together, pending and running ones alike: the bytes
// buffered for their programs and those of the writes waiting for room.
// A write that would pass it is refused (*QuotaError, RESOURCE_EXHAUSTED)
// without waiting, and the client retries once the programs have read.
// Before, each of a sandbox's 16 execs held 2 × MaxStdinBuffer: 254
// pending execs with 1 MiB buffered and 1 MiB waiting each took the
// supervisor to 735 MB.
const MaxSandboxStdin = 4 * MaxStdinBuffer

// DefaultMaxStdinBytes is the server-wide bound on the standard input
// held by every exec of every sandbox together (Config.MaxStdinBytes):
// 64 MiB, which the default --max-sandboxes (16) × MaxSandboxStdin never
// reaches.
const DefaultMaxStdinBytes = 64 << 20

// stdinBudget counts the standard input held by a sandbox's execs
// against MaxSandboxStdin and by the server's against its bound. A nil
// *stdinBudget counts nothing.
type stdinBudget struct {
	sandbox   *atomic.Int64
	server    *atomic.Int64
	serverMax int64
}

// take counts n more bytes held, or refuses them with a *QuotaError.
func (b *stdinBudget) take(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	if s := b.sandbox.Add(n); s > MaxSandboxStdin {
		b.sandbox.Add(-n)
		return &QuotaError{Limit: "limit on unread standard input held by the execs of one sandbox", Max: MaxSandboxStdin, Asked: s, Unit: " bytes"}
	}
	if s := b.server.Add(n); s > b.serverMax {
		b.server.Add(-n)
		b.sandbox.Add(-n)
		return &QuotaError{Limit: "limit on unread standard input held by the execs of every sandbox", Max: b.serverMax, Asked: s, Unit: " bytes"}
	}
	return nil
}

// give counts n bytes no longer held.
func (b *stdinBudget) give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.sandbox.Add(-n)
	b.server.Add(-n)
}

// stdinPipe is an exec's open standard input: WriteStdin puts bytes in,
// the mechanism reads them out (an io.Reader) and gives them to the
// program. Writes are all or nothing and wait, bounded by their context,
// for room in a buffer of MaxStdinBuffer bytes; one write at most waits,
// and while it does every other write is refused (ErrStdinBusy), which
// also keeps the writes in order. No goroutine is left behind by a write
// that gives up. A write's bytes are counted in budget (the sandbox's and
// the server's) from before it waits until the program has read them.
type stdinPipe struct {
	budget  *stdinBudget
	mu      sync.Mutex
	buf     []byte
	closed  bool          // no more writes: the reader gets EOF once buf is read
	gone    bool          // the exec ended: writes fail, reads get EOF
	waiting bool          // a write waits for room: others are refused
	wake    chan struct{} // closed and cleared on every change; nil when nobody waits
}

func newStdinPipe(budget *stdinBudget) *stdinPipe { return &stdinPipe{budget: budget} }

// write appends p, then closes the input when close is set. It waits for
// room (the program reading) until ctx ends. Errors: ErrStdinClosed after
// a close, ErrExecNotRunning once the exec has ended, ErrStdinBusy while
// another write waits, a *FieldError for p larger than MaxStdinBuffer,
// a *QuotaError when the sandbox's or the server's execs hold too much
// unread input (MaxSandboxStdin, Config.MaxStdinBytes), ctx's error.
func (p *stdinPipe) write(ctx context.Context, b []byte, close bool) error {
	if len(b) > MaxStdinBuffer {
		return &FieldError{Field: "data", Reason: fmt.Sprintf("%d bytes; at most %d per call", len(b), MaxStdinBuffer)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	waiting := false // this write holds the one place to wait
	held := false    // b's bytes are counted in the budget, not yet in buf
	defer func() {
		if waiting {
			p.waiting = false
		}
		if held {
			p.budget.give(int64(len(b)))
		}
	}()
	for {
		switch {
		case p.gone:
			return ErrExecNotRunning
		case p.closed:
			return ErrStdinClosed
		case p.waiting && !waiting:
			return ErrStdinBusy
		}
		if !held {
			if err := p.budget.take(int64(len(b))); err != nil {
				return err
			}
			held = true
		}
		if len(p.buf)+len(b) <= MaxStdinBuffer {
			p.buf = append(p.buf, b...)
			held = false // buf's now: given back as the program reads
			p.closed = close
			p.wakeLocked()
			return nil
		}
		waiting, p.waiting = true, true
		w := p.waitLocked()
		p.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			p.mu.Lock()
			return ctx.Err()
		}
		p.mu.Lock()
	}
}

// Read gives the program what was written, blocking until there is some;
// io.EOF once the input is closed and read, or the exec has ended.
func (p *stdinPipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		switch {
		case p.gone:
			p.mu.Unlock()
			return 0, io.EOF
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			p.budget.give(int64(n))
			if len(p.buf) == 0 {
				p.buf = nil // let a large buffer go
			}
			p.wakeLocked()
			p.mu.Unlock()
			return n, nil
		case p.closed:
			p.mu.Unlock()
			return 0, io.EOF
		}
		w := p.waitLocked()
		p.mu.Unlock()
		<-w
	}
}

// end marks the exec ended: writers waiting and to come fail, readers get
// EOF, and what was not read is dropped.
func (p *stdinPipe) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.budget.give(int64(len(p.buf)))
	p.gone, p.buf = true, nil
	p.wakeLocked()
}

func (p *stdinPipe) waitLocked() <-chan struct{} {
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	return p.wake
}

func (p *stdinPipe) wakeLocked() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}
