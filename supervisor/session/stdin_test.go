package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// TestStdinPipeBound: an exec's open stdin holds at most MaxStdinBuffer
// unread bytes; a write that does not fit waits for the reader and gives
// up with its context, writing nothing; closing gives the reader EOF
// after the rest; the exec's end fails writers and ends readers.
func TestStdinPipeBound(t *testing.T) {
	p := newStdinPipe()
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
	q := newStdinPipe()
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
