package registry

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/execfarm/execfarm/internal/utf8text"
)

// DefaultMaxOutputBytes is the per-stream output cap used when
// Meta.MaxOutputBytes is zero: 1 MiB.
const DefaultMaxOutputBytes = 1 << 20

// previewRunes is the length of Info.CodePreview in characters (runes).
const previewRunes = 100

// Meta describes an execution at creation. It never changes afterwards.
type Meta struct {
	// ID is the execution's id, set by Registry.Create (a value given to
	// Create is ignored).
	ID string
	// CodePreview is the code (or command) that runs. Create keeps the first
	// 100 characters, cut on a rune boundary, with invalid UTF-8 replaced by
	// U+FFFD so the preview can travel in a proto string.
	CodePreview string
	// Runtime names the runtime ("goja", "node", "shell", "python"); empty
	// means unspecified.
	Runtime string
	// IsCached is true when the code came from the script cache.
	IsCached bool
	// CachedName is the cache entry's name, empty if not cached.
	CachedName string
	// MaxOutputBytes is the cap on kept output per stream, bytes. Past it the
	// first half and the last half of the cap are kept and the middle is
	// dropped. Zero or negative => DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Owner names who may see the execution (the supervisor puts the
	// creating principal's key here); opaque to the registry, which only
	// filters listings by it (ListOwned). "" = nobody in particular.
	Owner string
	// Account is who the execution is charged to (the supervisor puts
	// the owner's principal without its client here: a caller chooses
	// its client keys freely, so only the account can be counted); past
	// MaxRetained, the account holding the most loses its oldest result.
	// "" is an account too.
	Account string
	// SandboxID names the session sandbox the execution runs in; "" for
	// an execution in a sandbox of its own. Opaque to the registry.
	SandboxID string
	// OnFinish, if set, is called once with the result as published, when
	// the execution becomes terminal, under the execution's lock: before
	// any reader or waiter can see the result. It may call only the
	// Execution's ID and Meta, and must not block (a session sandbox's
	// event log takes its end here, so that whoever sees the result finds
	// the end in the log).
	OnFinish func(Result)
	// OnOutputLimit, if set, is called once per stream, from the writing
	// goroutine and without any registry lock held, when that stream first
	// exceeds MaxOutputBytes. The runner uses it to stop an execution whose
	// request asked to stop on the output limit.
	OnOutputLimit func(Stream)
}

// Info is a snapshot of an execution for listings. A queued execution's
// place in the queue is not here: the scheduler's ticket is its one
// source (execution.Runner.QueuePosition).
type Info struct {
	ID          string
	State       State
	CreatedAt   time.Time // when Create was called
	StartedAt   time.Time // when Start succeeded; zero if never started
	FinishedAt  time.Time // when the execution became terminal; zero if not terminal
	CodePreview string    // first 100 characters of the code
	Runtime     string    // as given in Meta
	Reason      Reason    // why it ended; zero if not terminal
	IsCached    bool
	CachedName  string
	Owner       string // as given in Meta
	SandboxID   string // as given in Meta
}

// Execution is one run of code or a command. All methods are safe for
// concurrent use.
type Execution struct {
	id   string
	meta Meta
	reg  *Registry
	seq  uint64 // creation order in reg, breaks ties between equal times

	mu            sync.Mutex
	state         State
	created       time.Time
	started       time.Time
	finished      time.Time
	bufs          [2]*outBuf
	log           segLog
	result        Result
	cancel        func()
	cancelWanted  bool // Cancel was called before a cancel func was set
	cancelCalled  bool
	cancelCause   string        // CancelBecause's: said after CancelledText; "" for none
	notify        chan struct{} // closed and cleared on every change; nil when nobody waits
	done          chan struct{} // closed when terminal
	limitNotified [2]bool
	lines         []Line // console lines (lines.go)
	lineBytes     int64  // their cost (lineCost)
}

// ID returns the execution's id, a UUID.
func (e *Execution) ID() string { return e.id }

// Meta returns the metadata the execution was created with, preview cut.
func (e *Execution) Meta() Meta { return e.meta }

// State returns the current state.
func (e *Execution) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Info returns a snapshot of the execution.
func (e *Execution) Info() Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.infoLocked()
}

func (e *Execution) infoLocked() Info {
	return Info{
		ID:          e.id,
		State:       e.state,
		CreatedAt:   e.created,
		StartedAt:   e.started,
		FinishedAt:  e.finished,
		CodePreview: e.meta.CodePreview,
		Runtime:     e.meta.Runtime,
		Reason:      e.result.Reason,
		IsCached:    e.meta.IsCached,
		CachedName:  e.meta.CachedName,
		Owner:       e.meta.Owner,
		SandboxID:   e.meta.SandboxID,
	}
}

// Start moves the execution from Pending to Running and records the start
// time. It returns ErrTerminal if the execution already ended (for example it
// was cancelled while queued: the runner must then not run it) and
// ErrAlreadyStarted if it is running.
func (e *Execution) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.state.Terminal():
		return fmt.Errorf("start execution %s: %w", e.id, ErrTerminal)
	case e.state == StateRunning:
		return fmt.Errorf("start execution %s: %w", e.id, ErrAlreadyStarted)
	}
	e.state = StateRunning
	e.started = e.reg.now()
	e.wakeLocked()
	return nil
}

// Write appends p to the buffer of stream. Writes to a terminal execution and
// to an invalid stream are dropped: output written after the result is never
// seen by anyone. Write never blocks on readers.
func (e *Execution) Write(stream Stream, p []byte) {
	if !stream.valid() || len(p) == 0 {
		return
	}
	e.mu.Lock()
	if e.state.Terminal() {
		e.mu.Unlock()
		return
	}
	b := e.bufs[stream]
	before := b.kept()
	b.write(p)
	e.reg.buffered.Add(b.kept() - before)
	e.log.add(stream, b.written)
	fire := b.truncated && !e.limitNotified[stream]
	if fire {
		e.limitNotified[stream] = true
	}
	e.wakeLocked()
	e.mu.Unlock()
	if fire && e.meta.OnOutputLimit != nil {
		e.meta.OnOutputLimit(stream)
	}
}

// Writer returns an io.Writer that writes to stream. Its Write fails with
// ErrTerminal once the execution has ended, so an output pump stops.
func (e *Execution) Writer(stream Stream) io.Writer { return streamWriter{e, stream} }

type streamWriter struct {
	e      *Execution
	stream Stream
}

func (w streamWriter) Write(p []byte) (int, error) {
	if w.e.State().Terminal() {
		return 0, fmt.Errorf("write %s of execution %s: %w", w.stream, w.e.id, ErrTerminal)
	}
	w.e.Write(w.stream, p)
	return len(p), nil
}

// Read returns the kept bytes of stream from offset on, with next the offset
// to ask for next time (the total bytes written, less a trailing incomplete
// UTF-8 sequence held back while the execution runs). gap is true when bytes
// between offset and the end were dropped by truncation; the data then jumps
// over them. Returned data never starts or ends inside a UTF-8 sequence (for
// valid UTF-8 output): an offset inside a rune starts at the next rune. An
// offset at or past the end returns no data. Errors: ErrInvalidOffset for a
// negative offset, ErrInvalidStream.
func (e *Execution) Read(stream Stream, offset int64) (data []byte, next int64, gap bool, err error) {
	if !stream.valid() {
		return nil, 0, false, fmt.Errorf("read %s of execution %s: %w", stream, e.id, ErrInvalidStream)
	}
	if offset < 0 {
		return nil, 0, false, fmt.Errorf("read %s of execution %s at %d: %w", stream, e.id, offset, ErrInvalidOffset)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bufs[stream]
	spans, end, gap := b.read(offset, b.written, e.state.Terminal())
	for _, s := range spans {
		data = append(data, s.data...)
	}
	return data, end, gap, nil
}

// Page is one page of a stream (ReadPage). A page of a truncated stream
// may cross the bytes dropped from its middle: Head is then what was kept
// before them and Tail what follows, Dropped how many bytes were dropped
// in between (between the requested offset and Tail when the page starts
// among them; between Head and the page's end when it ends among them).
type Page struct {
	// Head is the kept bytes from the requested offset on, up to the
	// dropped bytes if the page crosses them; all of the page otherwise.
	Head []byte
	// Tail is the kept bytes after the dropped ones; empty when Dropped is 0.
	Tail []byte
	// Dropped is the number of bytes of the page's range that were
	// dropped, between Head and Tail; 0 when the page crosses no gap.
	Dropped int64
	// Next is the offset of the next page.
	Next int64
	// More reports that kept or unwritten bytes lie beyond Next: bytes
	// already written, or, while the execution runs, bytes still to come.
	More bool
}

// Data returns Head and Tail joined: the kept bytes of the page, the
// dropped ones left out.
func (p Page) Data() []byte { return append(p.Head[:len(p.Head):len(p.Head)], p.Tail...) }

// ReadPage is Read cut to a page: at most maxBytes of kept bytes from
// offset on (maxBytes > 0), ending on a UTF-8 boundary, with Next the
// offset of the next page, and the dropped bytes it crosses marked (see
// Page). A caller holds at most maxBytes of the stream however much it
// keeps. Errors as Read.
func (e *Execution) ReadPage(stream Stream, offset, maxBytes int64) (Page, error) {
	if !stream.valid() {
		return Page{}, fmt.Errorf("read %s of execution %s: %w", stream, e.id, ErrInvalidStream)
	}
	if offset < 0 {
		return Page{}, fmt.Errorf("read %s of execution %s at %d: %w", stream, e.id, offset, ErrInvalidOffset)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bufs[stream]
	to := b.pageEnd(offset, max(maxBytes, 4))
	terminal := e.state.Terminal()
	spans, end, gap := b.read(offset, to, terminal && to >= b.written)
	p := Page{Next: end, More: !terminal || end < b.written}
	pos := offset // where the bytes kept so far end
	for _, sp := range spans {
		if sp.gap {
			p.Dropped = sp.off - pos
			p.Tail = sp.data
			continue
		}
		p.Head = sp.data
		pos = sp.off + int64(len(sp.data))
	}
	if gap && p.Tail == nil {
		// The page ends among the dropped bytes.
		p.Dropped = end - pos
	}
	return p, nil
}

// OutputStats describes one stream's buffer.
type OutputStats struct {
	WrittenBytes int64 // total bytes written, dropped ones included
	KeptBytes    int64 // bytes held in memory
	DroppedBytes int64 // bytes dropped from the middle by truncation
	HeadBytes    int64 // bytes at offsets [0, HeadBytes) are kept as the head; valid when Truncated
	TailStart    int64 // offset of the oldest kept tail byte; valid when Truncated
	Truncated    bool  // the stream exceeded Meta.MaxOutputBytes
}

// Output returns statistics of the buffer of stream (zero for an invalid one).
func (e *Execution) Output(stream Stream) OutputStats {
	if !stream.valid() {
		return OutputStats{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bufs[stream]
	return OutputStats{
		WrittenBytes: b.written,
		KeptBytes:    b.kept(),
		DroppedBytes: b.dropped(),
		HeadBytes:    int64(len(b.head)),
		TailStart:    b.tailStart(),
		Truncated:    b.truncated,
	}
}

// Finish makes the execution terminal with r and reports whether this call
// did so. The first terminal transition wins: Finish returns false, and
// changes nothing, when the execution is already terminal or r.State is not a
// terminal state. The registry sets r's truncation flags and byte counts,
// QueueWaitMs when zero, and clears Success unless r.State is StateCompleted
// and no stream was truncated.
//
// The registry's bookkeeping (retention count, attachments and output
// share, which may drop this execution's attachment or cut its output and
// set AttachmentDropped or its truncation flags) is done
// before anyone can read the result, so that a result never changes once
// read.
func (e *Execution) Finish(r Result) bool {
	e.reg.mu.Lock()
	e.mu.Lock()
	ok := e.finishLocked(r)
	if ok {
		e.reg.finishedLocked(e)
	}
	e.mu.Unlock()
	e.reg.mu.Unlock()
	if ok {
		e.reg.finished(e)
	}
	return ok
}

func (e *Execution) finishLocked(r Result) bool {
	if e.state.Terminal() || !r.State.Terminal() {
		return false
	}
	out, errb := e.bufs[Stdout], e.bufs[Stderr]
	r.StdoutTruncated, r.StderrTruncated = out.truncated, errb.truncated
	r.StdoutBytes, r.StderrBytes = out.written, errb.written
	r.AttachmentDropped = false
	r.Success = r.Success && r.State == StateCompleted && !out.truncated && !errb.truncated
	if r.State == StateCancelled && r.Reason == ReasonCancelled && e.cancelCause != "" {
		r.Error = CancelledText + ": " + e.cancelCause
	}
	if r.QueueWaitMs == 0 && !e.started.IsZero() {
		r.QueueWaitMs = e.started.Sub(e.created).Milliseconds()
	}
	e.state = r.State
	e.result = r
	e.finished = e.reg.now()
	e.cancel = nil
	if e.meta.OnFinish != nil {
		e.meta.OnFinish(r)
	}
	if e.reg.resultHook != nil {
		e.reg.resultHook(e.meta, r)
	}
	close(e.done)
	e.wakeLocked()
	return true
}

// shrinkLocked cuts the kept output of stream of a terminal execution down to
// at most keep bytes (head and tail kept) for the retention budget, and
// marks the stream truncated in the result; it returns the bytes freed;
// e.mu is held.
// Success is not changed: the execution ran as it did.
func (e *Execution) shrinkLocked(stream Stream, keep int64) int64 {
	if !e.state.Terminal() {
		return 0
	}
	freed := e.bufs[stream].shrink(keep)
	if freed > 0 {
		if stream == Stdout {
			e.result.StdoutTruncated = true
		} else {
			e.result.StderrTruncated = true
		}
	}
	return freed
}

// dropAttachment drops the attachment of a terminal execution for the
// retention budget and says so in the result. Success is not changed.
func (e *Execution) dropAttachment() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropAttachmentLocked()
}

// dropAttachmentLocked is dropAttachment with e.mu held.
func (e *Execution) dropAttachmentLocked() {
	if e.state.Terminal() && e.result.Attachment != nil {
		e.result.Attachment = nil
		e.result.AttachmentDropped = true
	}
}

// Result returns the result and true once the execution is terminal.
func (e *Execution) Result() (Result, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.result, e.state.Terminal()
}

// Done returns a channel closed when the execution becomes terminal.
func (e *Execution) Done() <-chan struct{} { return e.done }

// Wait blocks until the execution is terminal and returns its result, or
// returns ctx.Err() when ctx is done first. Callers bound it with the call's
// deadline: a long poll is never unbounded.
func (e *Execution) Wait(ctx context.Context) (Result, error) {
	select {
	case <-e.done:
		r, _ := e.Result()
		return r, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// SetCancel registers the function that stops the execution (the runner's:
// it kills the sandbox's process tree and then finishes the execution as
// StateCancelled). If Cancel was already called, f is called at once. It is
// ignored on a terminal execution.
func (e *Execution) SetCancel(f func()) {
	e.mu.Lock()
	if e.state.Terminal() || f == nil {
		e.mu.Unlock()
		return
	}
	e.cancel = f
	call := e.cancelWanted && !e.cancelCalled
	if call {
		e.cancelCalled = true
	}
	e.mu.Unlock()
	if call {
		f()
	}
}

// CancelBecause is Cancel with why: when the execution then ends
// StateCancelled, ReasonCancelled (by this cancel or another), its
// result's error is CancelledText, ": " and cause ("Execution was
// cancelled: the sandbox expired: its lifetime passed") instead of
// CancelledText alone. The first cause given is kept; "" gives none.
// Errors are Cancel's.
func (e *Execution) CancelBecause(cause string) (State, error) {
	e.mu.Lock()
	if !e.state.Terminal() && e.cancelCause == "" {
		e.cancelCause = cause
	}
	e.mu.Unlock()
	return e.Cancel()
}

// Cancel asks the execution to stop and returns its state after the request.
// A terminal execution gives ErrTerminal (FAILED_PRECONDITION on the wire). A
// Pending execution with no cancel function yet is finished as StateCancelled
// here. Otherwise the registered cancel function is called (at most once;
// it is called later by SetCancel if none is registered yet) and the runner
// finishes the execution.
func (e *Execution) Cancel() (State, error) {
	e.mu.Lock()
	switch {
	case e.state.Terminal():
		st := e.state
		e.mu.Unlock()
		return st, fmt.Errorf("cancel execution %s: %w", e.id, ErrTerminal)
	case e.state == StatePending && e.cancel == nil:
		// Finish takes the registry's lock first: start over with it.
		e.mu.Unlock()
		if e.Finish(Result{State: StateCancelled, Reason: ReasonCancelled, Error: CancelledText}) {
			return StateCancelled, nil
		}
		return e.Cancel() // it changed meanwhile: decide again

	}
	f := e.cancel
	e.cancelWanted = true
	if f == nil || e.cancelCalled {
		st := e.state
		e.mu.Unlock()
		return st, nil
	}
	e.cancelCalled = true
	e.mu.Unlock()
	f()
	return e.State(), nil
}

// wakeLocked wakes every subscriber waiting for a change.
func (e *Execution) wakeLocked() {
	if e.notify != nil {
		close(e.notify)
		e.notify = nil
	}
}

// preview returns the first previewRunes characters of s as valid UTF-8.
func preview(s string) string {
	n := 0
	for i := range s {
		if n == previewRunes {
			s = s[:i]
			break
		}
		n++
	}
	return utf8text.String(s)
}
