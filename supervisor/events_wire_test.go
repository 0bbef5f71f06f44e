package supervisor

import (
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"

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
