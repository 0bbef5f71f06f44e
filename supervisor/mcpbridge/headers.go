package mcpbridge

import (
	"net"
	"net/http"
	"sync"
)

// DefaultHeaderConnsPerAddress bounds the connections of one client
// address still sending their first request's headers (HeaderGuard): a
// sixteenth of `execfarm mcp --http`'s 256 connection slots, so that
// one address cannot hold them all with unfinished headers (a red-team
// pass held all 256 without a token and delayed every other client's
// connection by 12-15 s, until ReadHeaderTimeout closed them).
const DefaultHeaderConnsPerAddress = 16

// HeaderGuard bounds, per client IP address, the connections that have
// not yet sent a whole request's headers: a connection past the bound
// is closed as it is accepted, before it takes a place of the server's
// connection limit. A connection counts from its accept until its first
// request reaches the handler (its headers are in) or it closes. Wire
// it with Listener (inside the connection limit), ConnState and Handler
// on one http.Server.
type HeaderGuard struct {
	max int

	mu      sync.Mutex
	pending map[string]int    // IP address -> connections still sending headers
	conns   map[string]string // a pending connection's remote address -> its IP
}

// NewHeaderGuard returns a HeaderGuard of max connections per address
// (<= 0: DefaultHeaderConnsPerAddress).
func NewHeaderGuard(max int) *HeaderGuard {
	if max <= 0 {
		max = DefaultHeaderConnsPerAddress
	}
	return &HeaderGuard{max: max, pending: map[string]int{}, conns: map[string]string{}}
}

// Listener returns l, whose Accept closes a connection past the bound
// of its address and goes on accepting.
func (g *HeaderGuard) Listener(l net.Listener) net.Listener {
	return &guardedListener{Listener: l, g: g}
}

type guardedListener struct {
	net.Listener
	g *HeaderGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c.RemoteAddr().String()) {
			return c, nil
		}
		_ = c.Close()
	}
}

func ipOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

func (g *HeaderGuard) admit(addr string) bool {
	ip := ipOf(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[ip] >= g.max {
		return false
	}
	g.pending[ip]++
	g.conns[addr] = ip
	return true
}

// done ends the header phase of the connection from addr (once).
func (g *HeaderGuard) done(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ip, ok := g.conns[addr]
	if !ok {
		return
	}
	delete(g.conns, addr)
	if g.pending[ip]--; g.pending[ip] <= 0 {
		delete(g.pending, ip)
	}
}

// Pending returns how many connections from ip are still sending headers.
func (g *HeaderGuard) Pending(ip string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pending[ip]
}

// ConnState is the http.Server's ConnState: a closed (or hijacked)
// connection is no longer pending.
func (g *HeaderGuard) ConnState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		g.done(c.RemoteAddr().String())
	}
}

// Handler returns next, each request of which ends its connection's
// header phase.
func (g *HeaderGuard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.done(r.RemoteAddr)
		next.ServeHTTP(w, r)
	})
}
