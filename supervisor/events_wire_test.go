package supervisor

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/session"
)

// TestWireCacheSharesWhileHeld: subscribers asking for one event's
// encoding while one is held get that one, encoded once; another
// compressor or event is encoded apart; once nothing holds an encoding
// the cache forgets it.
func TestWireCacheSharesWhileHeld(t *testing.T) {
	var c wireCache
	ev, other := &session.Event{Data: []byte("x")}, &session.Event{}
	encodes := 0
	encode := func() (*grpc.PreparedMsg, error) {
		encodes++
		return new(grpc.PreparedMsg), nil
	}
	held := make([]*grpc.PreparedMsg, 0, 4)
	for range 3 {
		p, err := c.get(wireKey{ev, ""}, encode)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	if encodes != 1 || held[0] != held[1] || held[1] != held[2] {
		t.Fatalf("3 subscribers of one event: %d encodings, want 1 shared", encodes)
	}
	p, _ := c.get(wireKey{ev, "gzip"}, encode)
	q, _ := c.get(wireKey{other, ""}, encode)
	if encodes != 3 || p == held[0] || q == held[0] {
		t.Fatalf("another compressor and another event: %d encodings, want 3", encodes)
	}
	if c.len() != 3 {
		t.Fatalf("%d slots, want 3", c.len())
	}
	runtime.KeepAlive(held)
	runtime.KeepAlive(p)
	runtime.KeepAlive(q)
	held, p, q = nil, nil, nil
	for deadline := time.Now().Add(10 * time.Second); c.len() > 0; time.Sleep(time.Millisecond) {
		runtime.GC()
		if time.Now().After(deadline) {
			t.Fatalf("%d slots held 10 s after nothing held their encodings", c.len())
		}
	}
	_ = held
}

// TestPageTextWithinItsRoom: a page's text (pageText: invalid runs made
// U+FFFD, head and tail apart) never takes more than the room a
// GetExecution reserved for it before reading it (textBytes).
func TestPageTextWithinItsRoom(t *testing.T) {
	alphabet := []byte{'a', 0xff, 0xe2, 0x82, 0xac, 0xc3, 0xa9, 0xf0}
	rng := rand.New(rand.NewPCG(1, 2))
	page := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	for range 20000 {
		p := registry.Page{Head: page(rng.IntN(12))}
		if rng.IntN(2) == 0 {
			p.Tail, p.Dropped = page(rng.IntN(12)), 1
		}
		n := int64(len(p.Head) + len(p.Tail))
		if text, _ := pageText(p); int64(len(text)) > textBytes(n) {
			t.Fatalf("page %q|%q: %d bytes of text, room for %d", p.Head, p.Tail, len(text), textBytes(n))
		}
	}
	// The worst case: an invalid byte after each valid one.
	p := registry.Page{Head: []byte(strings.Repeat("\xffa", 1000))}
	if text, _ := pageText(p); int64(len(text)) != 2*int64(len(p.Head)) {
		t.Fatalf("alternating page: %d bytes of text, want %d", len(text), 2*len(p.Head))
	}
}
