package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/execfarm/execfarm/isolation/namespace"
)

// ErrNoIDRange is returned by IDPool.Acquire when every uid range is held
// by a live sandbox.
var ErrNoIDRange = errors.New("sandbox: no free uid range")

// IDPool hands out disjoint host uid/gid ranges, one per live sandbox, so
// two sandboxes never share a host uid (DESIGN.md, "Isolation, in order").
type IDPool struct {
	base  uint32
	size  uint32
	mu    sync.Mutex
	free  []int
	total int
}

// NewIDPool returns a pool of slots ranges of size ids each, the first
// starting at host id base. size 0 means 65536.
func NewIDPool(base, size uint32, slots int) *IDPool {
	if size == 0 {
		size = 65536
	}
	p := &IDPool{base: base, size: size, total: slots}
	for i := slots - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p
}

// Acquire returns a free range and the function that gives it back.
func (p *IDPool) Acquire() (namespace.IDRange, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return namespace.IDRange{}, nil, ErrNoIDRange
	}
	slot := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	r := namespace.IDRange{HostID: p.base + uint32(slot)*p.size, Size: p.size}
	var once sync.Once
	return r, func() {
		once.Do(func() {
			p.mu.Lock()
			p.free = append(p.free, slot)
			p.mu.Unlock()
		})
	}, nil
}

// Slots returns the number of ranges: the most sandboxes alive at once.
func (p *IDPool) Slots() int { return p.total }

// InUse returns the number of ranges held.
func (p *IDPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total - len(p.free)
}

// newID returns a fresh sandbox id: "sb-" and 64 random bits in hex. It is
// short on purpose: it names the host directory holding the plugin socket,
// and unix socket paths are limited to 108 bytes.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sb-" + hex.EncodeToString(b[:])
}
