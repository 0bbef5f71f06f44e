package supervisor

import (
	"runtime"
	"sync"
	"weak"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/supervisor/session"
)

// Every subscriber of a sandbox's events sends the same messages: each
// event is encoded once for all of them (a grpc.PreparedMsg, shared and
// never changed), not once per subscriber. wireCache holds the encodings
// while a send holds them (weak pointers): what it keeps alive is what
// gRPC has yet to write, which transport.Reserve bounds.

// wireKey names an event's encoding: the event (it belongs to one log,
// at one offset) and the stream's send compressor (a prepared message is
// compressed as the stream that encoded it is).
type wireKey struct {
	ev   *session.Event
	comp string
}

type wireSlot struct {
	mu sync.Mutex
	p  weak.Pointer[grpc.PreparedMsg]
}

type wireCache struct {
	mu sync.Mutex
	m  map[wireKey]*wireSlot
}

// get returns the encoding of k, made by encode unless a live one is
// held.
func (c *wireCache) get(k wireKey, encode func() (*grpc.PreparedMsg, error)) (*grpc.PreparedMsg, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[wireKey]*wireSlot{}
	}
	s := c.m[k]
	if s == nil {
		s = &wireSlot{}
		c.m[k] = s
	}
	c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.p.Value(); p != nil {
		return p, nil
	}
	p, err := encode()
	if err != nil {
		return nil, err
	}
	s.p = weak.Make(p)
	runtime.AddCleanup(p, c.forget, k)
	return p, nil
}

// forget drops k's slot once its encoding is collected, unless a newer
// one is live.
func (c *wireCache) forget(k wireKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[k]
	if s == nil {
		return
	}
	s.mu.Lock()
	dead := s.p.Value() == nil
	s.mu.Unlock()
	if dead {
		delete(c.m, k)
	}
}

// len returns the slots held (tests).
func (c *wireCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
