package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/supervisor/registry"
)

// TestStdinPipeBound: an exec's open stdin holds at most MaxStdinBuffer
// unread bytes; a write that does not fit waits for the reader and gives
// up with its context, writing nothing; closing gives the reader EOF
// after the rest; the exec's end fails writers and ends readers.
func TestStdinPipeBound(t *testing.T) {
	p := newStdinPipe(nil)
	ctx := context.Background()
	full := bytes.Repeat([]byte("a"), MaxStdinBuffer)
	if err := p.write(ctx, full, false); err != nil {
		t.Fatal(err)
	}
	var fe *FieldError
	if err := p.write(ctx, append(full, 'x'), false); !errors.As(err, &fe) {
		t.Fatalf("a write over the bound: %v, want a *FieldError", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.write(cancelled, []byte("b"), false); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write into a full buffer with its context ended: %v", err)
	}
	// A write waiting for room goes in once the reader has read.
	done := make(chan error, 1)
	go func() { done <- p.write(ctx, []byte("bc"), true) }()
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := string(full) + "bc"; string(got) != want {
		t.Fatalf("read %d bytes ending %q, want %d ending \"bc\" (nothing of the cancelled write)", len(got), got[len(got)-3:], len(want))
	}
	if err := p.write(ctx, []byte("d"), false); !errors.Is(err, ErrStdinClosed) {
		t.Fatalf("a write after the close: %v", err)
	}
	q := newStdinPipe(nil)
	readErr := make(chan error, 1)
	go func() { _, err := q.Read(make([]byte, 8)); readErr <- err }()
	q.end()
	if err := <-readErr; err != io.EOF {
		t.Fatalf("a reader at the exec's end: %v, want EOF", err)
	}
	if err := q.write(ctx, []byte("e"), false); !errors.Is(err, ErrExecNotRunning) {
		t.Fatalf("a write after the exec's end: %v", err)
	}
}

// TestStdinPipeOneWaitingWrite: while one write waits for room, another
// is refused at once with ErrStdinBusy (a waiting write holds its data in
// the supervisor's memory, so unbounded waiting writes grew it by 1 MiB
// each: red-team F11); once the waiting write has gone in, or given up,
// the next is accepted.
func TestStdinPipeOneWaitingWrite(t *testing.T) {
	p := newStdinPipe(nil)
	ctx := context.Background()
	if err := p.write(ctx, bytes.Repeat([]byte("a"), MaxStdinBuffer), false); err != nil {
		t.Fatal(err)
	}
	isWaiting := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waiting
	}
	// A refused write returns at once; without the refusal it would wait
	// for room, until this deadline.
	refused, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	// A write that waits, then goes in when the reader makes room.
	done := make(chan error, 1)
	go func() { done <- p.write(ctx, []byte("b"), false) }()
	if !waitFor(5*time.Second, isWaiting) {
		t.Fatal("the first write never waited")
	}
	if err := p.write(refused, []byte("c"), false); !errors.Is(err, ErrStdinBusy) {
		t.Fatalf("a second write while one waits: %v, want ErrStdinBusy", err)
	}
	if _, err := io.ReadFull(p, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting write after a read: %v", err)
	}
	// A write that waits, then gives up with its context.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- p.write(cctx, []byte("d"), false) }()
	if !waitFor(5*time.Second, isWaiting) {
		t.Fatal("the write after it never waited")
	}
	if err := p.write(refused, []byte("e"), false); !errors.Is(err, ErrStdinBusy) {
		t.Fatalf("a write while another waits: %v, want ErrStdinBusy", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled write: %v", err)
	}
	// Nobody waits now: the next write may wait in its turn, and goes in.
	go func() { done <- p.write(ctx, []byte("f"), true) }()
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a write after the cancelled one: %v", err)
	}
	if want := strings.Repeat("a", MaxStdinBuffer-1) + "bf"; string(got) != want {
		t.Fatalf("read %d bytes ending %q, want %d ending \"bf\"", len(got), got[max(0, len(got)-3):], len(want))
	}
}

// TestStdinBudget: the execs of one sandbox, pending or running, hold
// at most MaxSandboxStdin of unread standard input together, and those
// of every sandbox at most Config.MaxStdinBytes: a write past either is
// refused at once (*QuotaError, RESOURCE_EXHAUSTED) naming it, and an
// exec's end gives its bytes back. Before, each of a sandbox's execs held
// 2 × MaxStdinBuffer: 254 pending execs took the supervisor to 735 MB.
func TestStdinBudget(t *testing.T) {
	h := newHarness(t, Config{MaxStdinBytes: MaxSandboxStdin + MaxStdinBuffer})
	ctx := context.Background()
	mib := bytes.Repeat([]byte("i"), MaxStdinBuffer)
	s := h.create(t, CreateParams{})
	var execs []*registry.Execution
	for range 5 { // beyond the runner's 4 slots: some pending
		e, err := h.m.Exec(ctx, alice, s.ID(), ExecParams{Code: "block", StdinOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		execs = append(execs, e)
	}
	for i, e := range execs[:4] {
		if err := h.m.WriteStdin(ctx, alice, e.ID(), mib, false); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	var qe *QuotaError
	err := h.m.WriteStdin(ctx, alice, execs[4].ID(), mib, false)
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "one sandbox") {
		t.Fatalf("a fifth MiB in one sandbox: %v, want a *QuotaError naming the sandbox's limit", err)
	}
	// A write waiting for room holds its bytes too: it is refused as well.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := h.m.WriteStdin(short, alice, execs[0].ID(), []byte("x"), false); !errors.As(err, &qe) {
		t.Fatalf("a write into a full exec of a full sandbox: %v, want a *QuotaError", err)
	}
	// The server-wide bound: another sandbox gets what is left of it.
	s2 := h.create(t, CreateParams{})
	e2, err := h.m.Exec(ctx, alice, s2.ID(), ExecParams{Code: "block", StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.m.WriteStdin(ctx, alice, e2.ID(), mib, false); err != nil {
		t.Fatal(err)
	}
	err = h.m.WriteStdin(ctx, alice, e2.ID(), []byte("x"), false)
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "every sandbox") {
		t.Fatalf("past the server's bound: %v, want a *QuotaError naming it", err)
	}
	// An exec's end gives its bytes back.
	if _, err := execs[0].Cancel(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool { return h.m.WriteStdin(ctx, alice, execs[4].ID(), mib, false) == nil }) {
		t.Fatal("the cancelled exec's input was never given back")
	}
	for _, e := range append(execs[1:], e2) {
		_, _ = e.Cancel()
	}
	if !waitFor(5*time.Second, func() bool { return h.m.stdinHeld.Load() == 0 }) {
		t.Errorf("%d bytes still counted once every exec ended", h.m.stdinHeld.Load())
	}
}
