package budget

import (
	"errors"
	"strings"
	"testing"
)

func TestAcquireRelease(t *testing.T) {
	b, err := New(100)
	if err != nil {
		t.Fatal(err)
	}
	woken := 0
	b.OnRelease(func() { woken++ })
	if err := b.TryAcquire(60); err != nil {
		t.Fatal(err)
	}
	err = b.TryAcquire(50)
	var be *Error
	if !errors.As(err, &be) || !errors.Is(err, ErrExhausted) || be.Held != 60 || be.Total != 100 || be.Asked != 50 {
		t.Fatalf("TryAcquire(50) with 60 of 100 held = %#v", err)
	}
	if !strings.Contains(err.Error(), "--memory-budget") {
		t.Errorf("message %q does not name the flag", err)
	}
	if err := b.TryAcquire(40); err != nil {
		t.Fatalf("TryAcquire(40) to the total: %v", err)
	}
	b.Release(60)
	if woken != 1 {
		t.Fatalf("OnRelease called %d times, want 1", woken)
	}
	if held, total := b.Usage(); held != 40 || total != 100 {
		t.Fatalf("Usage = %d,%d want 40,100", held, total)
	}
	if err := b.TryAcquire(101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("TryAcquire(101) = %v, want ErrTooLarge", err)
	}
	if err := b.Fits(100); err != nil {
		t.Fatalf("Fits(100) = %v", err)
	}
	if err := b.Fits(101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Fits(101) = %v, want ErrTooLarge", err)
	}
}

func TestOverReleasePanics(t *testing.T) {
	b, _ := New(10)
	defer func() {
		if recover() == nil {
			t.Fatal("release of bytes not held did not panic")
		}
	}()
	b.Release(1)
}

func TestNilAdmitsEverything(t *testing.T) {
	var b *Budget
	if err := b.TryAcquire(1 << 62); err != nil {
		t.Fatal(err)
	}
	b.Release(1 << 62)
	if h, tot := b.Usage(); h != 0 || tot != 0 {
		t.Fatalf("Usage = %d,%d", h, tot)
	}
}

func TestNewRejectsZero(t *testing.T) {
	if _, err := New(0); err == nil {
		t.Fatal("New(0) = nil error")
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{100: "100 bytes", 1 << 20: "1Mi", 3 << 29: "1.5Gi", 8 << 30: "8Gi"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

// Bytes kept by Reserve are free to TryAcquireReserved only, and are
// named in TryAcquire's refusal.
func TestReserve(t *testing.T) {
	b, _ := New(100)
	b.Reserve(70)
	err := b.TryAcquire(40)
	var be *Error
	if !errors.As(err, &be) || !errors.Is(err, ErrExhausted) || be.Reserved != 70 {
		t.Fatalf("TryAcquire(40) with 70 kept = %#v", err)
	}
	if !strings.Contains(err.Error(), "70 bytes is kept for the execution first in the queue") {
		t.Errorf("message %q does not name what is kept", err)
	}
	if err := b.TryAcquire(30); err != nil {
		t.Fatalf("TryAcquire(30) beyond the 70 kept: %v", err)
	}
	if err := b.TryAcquireReserved(70); err != nil {
		t.Fatalf("TryAcquireReserved(70): %v", err)
	}
	if held, _ := b.Usage(); held != 100 {
		t.Fatalf("held %d, want 100", held)
	}
	b.Release(100)
	b.Reserve(0)
	if err := b.TryAcquire(100); err != nil {
		t.Fatalf("TryAcquire(100) with nothing kept: %v", err)
	}
}
