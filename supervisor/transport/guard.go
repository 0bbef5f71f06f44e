package transport

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Bounds of the server's connections and streams (Config.ListenServer).
// Every connection costs a descriptor, two goroutines and buffers; without
// them unauthenticated clients (grpc.health.v1 is exempt from the token)
// could hold every descriptor of the supervisor.
const (
	// DefaultMaxConnections bounds the connections open at once; it is
	// lowered to half the process's RLIMIT_NOFILE when that is smaller
	// (sandboxes need descriptors too).
	DefaultMaxConnections = 1024
	// DefaultMaxConnectionsPerPeer bounds the connections of one peer: one
	// remote IP address over TCP, one uid over the unix socket. Past it a
	// new connection of that peer is closed at once.
	DefaultMaxConnectionsPerPeer = 128
	// DefaultReservedConnections are kept for callers that authenticate:
	// with a token, connections that have made no authenticated call yet
	// may hold at most the maximum less this many; a new connection past
	// that closes the oldest of them (it is not refused: at accept time
	// nothing tells a caller with the token from one without).
	DefaultReservedConnections = 64
	// DefaultReservedConnectionsPerPeer does the same within one peer:
	// with a token, a peer's connections that have not authenticated may
	// hold at most MaxConnectionsPerPeer less this many, so that
	// tokenless callers of a uid or an address (pods sharing a uid,
	// clients behind one NAT) cannot lock out its callers with the token.
	DefaultReservedConnectionsPerPeer = 16
	// MaxStreamsPerConnection bounds the calls in flight on a connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); more wait in the client.
	MaxStreamsPerConnection = 128
	// MaxUnauthenticatedStreams bounds the grpc.health.v1 calls in flight
	// on connections that have not authenticated (with a token), all
	// together, and MaxUnauthenticatedStreamsPerConnection on each; past
	// them they end RESOURCE_EXHAUSTED. Every other call of such a
	// connection without the token is refused before its request is read
	// (guard.tap).
	MaxUnauthenticatedStreams              = 128
	MaxUnauthenticatedStreamsPerConnection = 4
	// HandshakeTimeout bounds a connection's TLS and HTTP/2 handshakes.
	HandshakeTimeout = 10 * time.Second
	// MaxConnectionIdle closes a connection with no call in flight for
	// this long (a GOAWAY: gRPC clients reconnect when they next call).
	MaxConnectionIdle = 5 * time.Minute
	// MaxUnsentBytesPerConnection and MaxUnsentBytes bound the response
	// bytes handed to gRPC and not yet written to the connection (a peer
	// that does not read its responses), per connection and in all; see
	// Reserve.
	MaxUnsentBytesPerConnection = 4 << 20
	MaxUnsentBytes              = 64 << 20
)

// sendWait is how long Reserve waits for room while no connection writes
// anything (a variable for tests).
var sendWait = 10 * time.Second

// ErrSendBacklog is returned by Reserve and ReserveSend when responses
// already handed to gRPC were not read in time to make room.
var ErrSendBacklog = errors.New("transport: too many response bytes waiting to be read")

// Reserve takes room for a response of at most n bytes that the caller is
// about to build and hand to gRPC on ctx's connection: the response
// budget of the server. Reserved bytes count as unsent until the
// connection has written as many bytes (every byte it writes counts, so
// the account errs on the side of room). Call it BEFORE building the
// response, so that what is being built and what waits to be written are
// bounded together; then Settle with the response's real size once it is
// built, or Release when nothing is sent.
//
// Reserve waits while the connection holds MaxUnsentBytesPerConnection or
// all connections MaxUnsentBytes (a connection with none may take one
// response, however large, and so may the server when it holds none), in
// order (the callers on a connection in the order they came; across
// connections, in the order their first fit their connection), until ctx
// ends or 10 s pass in which no connection wrote anything; then it
// returns ctx's error or
// ErrSendBacklog. Calls on a connection the guard does not track (no
// ListenServer) get a Reservation that accounts nothing.
func Reserve(ctx context.Context, n int64) (*Reservation, error) {
	c := connOf(ctx)
	if c == nil || n <= 0 {
		return &Reservation{}, nil
	}
	if err := c.g.reserveSend(ctx, c, n); err != nil {
		return nil, err
	}
	return &Reservation{c: c, n: n}, nil
}

// ReserveSend is Reserve of a response already built, of n bytes, settled
// at once.
func ReserveSend(ctx context.Context, n int64) error {
	_, err := Reserve(ctx, n)
	return err
}

// Reservation is room taken by Reserve. Its methods may be called once
// (later calls do nothing); a nil or zero Reservation accounts nothing.
type Reservation struct {
	c    *trackedConn
	n    int64
	done bool
}

// Settle sets the reservation to the response's real size: room reserved
// beyond it is given back at once; a response larger than what was
// reserved counts its excess without waiting (it is already built).
func (r *Reservation) Settle(size int64) {
	if r == nil || r.c == nil || r.done {
		return
	}
	r.done = true
	g := r.c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	switch d := max(size, 0) - r.n; {
	case d > 0 && !r.c.closed:
		r.c.unsent.Add(d)
		g.unsent += d
	case d < 0:
		g.creditLocked(r.c, -d)
	}
}

// Release gives the whole reservation back: nothing was sent.
func (r *Reservation) Release() { r.Settle(0) }

// guard tracks the server's connections: totals, per peer, and with a
// token which ones have authenticated.
type guard struct {
	max, perPeer, reserve, peerReserve int
	tokens                             *TokenSet     // nil: no token
	token                              bool          // tokens != nil
	health                             chan struct{} // slots for unauthenticated health calls
	recv                               *recvBudget   // request bytes being received (limits.go)
	unauth                             *recvBudget   // those of unauthenticated health calls

	mu       sync.Mutex
	conns    int
	byPeer   map[string]int
	unproven *list.List // of *trackedConn, oldest first; with a token only
	// unprovenByPeer counts unproven's connections per peer.
	unprovenByPeer map[string]int
	unsent         int64 // reserved response bytes not yet written, all connections
	// ready holds, in the order they became so, the waiting reservations
	// that are first of their connection's and fit its bound: at most
	// one per connection, so that granting never walks the waiters that
	// wait for their own connection.
	ready   list.List // of *sendWaiter
	nwait   int       // reservations waiting, all connections
	written int64     // bytes written by tracked connections with unsent bytes, ever (progress)
}

// sendWaiter is a Reserve waiting for room.
type sendWaiter struct {
	c       *trackedConn
	n       int64
	ready   chan struct{} // closed when granted
	granted bool
	inConn  *list.Element // in c.waiting until granted or given up
	inReady *list.Element // in guard.ready, or nil
}

func (g *guard) reserveSend(ctx context.Context, c *trackedConn, n int64) error {
	g.mu.Lock()
	w := &sendWaiter{c: c, n: n, ready: make(chan struct{})}
	w.inConn = c.waiting.PushBack(w)
	g.nwait++
	g.promoteLocked(c)
	g.grantLocked()
	if w.granted {
		g.mu.Unlock()
		return nil
	}
	seen := g.written
	g.mu.Unlock()
	timer := time.NewTimer(sendWait)
	defer timer.Stop()
	for {
		var err error
		select {
		case <-w.ready:
			return nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
		}
		g.mu.Lock()
		switch {
		case w.granted:
			// Granted as the wait ended: keep it when nothing failed.
			if err == nil {
				g.mu.Unlock()
				return nil
			}
			g.creditLocked(c, n)
		case err == nil && g.written != seen:
			// Bytes were written meanwhile: the backlog moves, wait on.
			seen = g.written
			g.mu.Unlock()
			timer.Reset(sendWait)
			continue
		default:
			g.dequeueLocked(w)
			g.promoteLocked(c) // its connection's next may be first now
			g.grantLocked()    // and a waiter ahead may have held others back
		}
		cu, all := c.unsent.Load(), g.unsent
		g.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("%w (%d bytes on this connection, %d in all; %d asked)", ErrSendBacklog, cu, all, n)
		}
		return err
	}
}

// dequeueLocked takes w out of the queues.
func (g *guard) dequeueLocked(w *sendWaiter) {
	if w.inReady != nil {
		g.ready.Remove(w.inReady)
		w.inReady = nil
	}
	w.c.waiting.Remove(w.inConn)
	w.inConn = nil
	g.nwait--
}

// promoteLocked puts c's first waiting reservation in g.ready when it fits
// c's bound (a connection with nothing unsent takes one of any size) or c
// is closed.
func (g *guard) promoteLocked(c *trackedConn) {
	e := c.waiting.Front()
	if e == nil {
		return
	}
	w := e.Value.(*sendWaiter)
	if cu := c.unsent.Load(); w.inReady == nil && (c.closed || cu == 0 || cu+w.n <= MaxUnsentBytesPerConnection) {
		w.inReady = g.ready.PushBack(w)
	}
}

// grantLocked grants the ready reservations in order while they fit the
// server's budget (the server holding nothing takes one of any size): one
// that does not fit holds back those behind it, so that a large response
// is not starved by small ones. A reservation on a closed connection is
// granted without accounting (nothing more is written to it, nor
// credited; its call fails on its own).
func (g *guard) grantLocked() {
	for e := g.ready.Front(); e != nil; e = g.ready.Front() {
		w := e.Value.(*sendWaiter)
		if c := w.c; !c.closed {
			if g.unsent != 0 && g.unsent+w.n > MaxUnsentBytes {
				return
			}
			if cu := c.unsent.Load(); cu != 0 && cu+w.n > MaxUnsentBytesPerConnection {
				// Its connection filled up since (Settle): it waits
				// for its connection again.
				g.ready.Remove(e)
				w.inReady = nil
				continue
			}
			c.unsent.Add(w.n)
			g.unsent += w.n
		}
		g.dequeueLocked(w)
		w.granted = true
		close(w.ready)
		g.promoteLocked(w.c)
	}
}

// creditLocked takes up to n bytes off c's unsent account and grants
// what then fits.
func (g *guard) creditLocked(c *trackedConn, n int64) {
	d := min(c.unsent.Load(), n)
	c.unsent.Add(-d)
	g.unsent -= d
	if c.waiting.Len() > 0 {
		g.promoteLocked(c)
	}
	if g.ready.Len() > 0 {
		g.grantLocked()
	}
}

// wrote credits n written bytes against c's unsent account.
func (g *guard) wrote(c *trackedConn, n int64) {
	g.mu.Lock()
	g.written += n
	g.creditLocked(c, n)
	g.mu.Unlock()
}

func newGuard(maxConns, perPeer, reserve, peerReserve int, tokens *TokenSet, recv *recvBudget) *guard {
	if lim := nofileLimit(); lim > 0 && lim/2 < maxConns {
		maxConns = max(lim/2, 1)
	}
	reserve = min(reserve, maxConns/2)
	peerReserve = min(peerReserve, perPeer/2)
	return &guard{max: maxConns, perPeer: perPeer, reserve: reserve, peerReserve: peerReserve, tokens: tokens, token: tokens != nil,
		health: make(chan struct{}, MaxUnauthenticatedStreams), recv: recv,
		unauth: &recvBudget{max: UnauthenticatedReceiveBudget, perConn: UnauthenticatedReceiveBudgetPerConnection}, byPeer: map[string]int{}, unproven: list.New(), unprovenByPeer: map[string]int{}}
}

// trackedConn is an accepted connection; its RemoteAddr carries it into
// every call's peer.Peer, so that a call can mark it authenticated.
type trackedConn struct {
	net.Conn
	g    *guard
	peer string
	addr trackedAddr
	elem *list.Element // in g.unproven until the first authenticated call
	once sync.Once
	// unsent is Reserve's account of this connection (guard.mu changes
	// it; Write reads it without the lock to skip the common case).
	unsent atomic.Int64
	// frames is the connection's plaintext as gRPC reads it (framingCreds),
	// health its unauthenticated health calls in flight.
	frames  atomic.Pointer[framedConn]
	health  atomic.Int32
	closed  bool      // under guard.mu: Close ran
	waiting list.List // of *sendWaiter, under guard.mu: Reserves waiting on it, in order
}

func (c *trackedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 && c.unsent.Load() > 0 {
		c.g.wrote(c, int64(n))
	}
	return n, err
}

// trackedAddr is the connection's remote address, with the connection.
type trackedAddr struct {
	net.Addr
	c *trackedConn
}

func (c *trackedConn) RemoteAddr() net.Addr { return c.addr }

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		g := c.g
		g.mu.Lock()
		g.conns--
		if g.byPeer[c.peer]--; g.byPeer[c.peer] <= 0 {
			delete(g.byPeer, c.peer)
		}
		g.forgetUnproven(c)
		c.closed = true
		g.creditLocked(c, c.unsent.Load())
		g.mu.Unlock()
		if f := c.frames.Load(); f != nil {
			f.closeAccounts()
		}
	})
	return c.Conn.Close()
}

// forgetUnproven takes c out of the unauthenticated connections; g.mu
// is held.
func (g *guard) forgetUnproven(c *trackedConn) {
	if c.elem == nil {
		return
	}
	g.unproven.Remove(c.elem)
	c.elem = nil
	if g.unprovenByPeer[c.peer]--; g.unprovenByPeer[c.peer] <= 0 {
		delete(g.unprovenByPeer, c.peer)
	}
}

// admit registers c and returns true, or returns false when c must be
// closed at once. A non-nil victim means: close it (the oldest
// unauthenticated connection, of c's peer when the peer's bound is
// reached) and ask again.
func (g *guard) admit(c *trackedConn) (ok bool, victim *trackedConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byPeer[c.peer] >= g.perPeer || (g.token && g.unprovenByPeer[c.peer] >= g.perPeer-g.peerReserve) {
		for e := g.unproven.Front(); e != nil; e = e.Next() {
			if v := e.Value.(*trackedConn); v.peer == c.peer {
				return false, v
			}
		}
		return false, nil
	}
	if g.conns >= g.max || (g.token && g.unproven.Len() >= g.max-g.reserve) {
		if front := g.unproven.Front(); front != nil {
			return false, front.Value.(*trackedConn)
		}
		return false, nil
	}
	g.conns++
	g.byPeer[c.peer]++
	if g.token {
		c.elem = g.unproven.PushBack(c)
		g.unprovenByPeer[c.peer]++
	}
	return true, nil
}

// prove marks c as authenticated.
func (c *trackedConn) prove() {
	c.g.mu.Lock()
	c.g.forgetUnproven(c)
	c.g.mu.Unlock()
}

// prove marks the connection of ctx's call as authenticated.
func prove(ctx context.Context) {
	if c := connOf(ctx); c != nil {
		c.prove()
	}
}

func connOf(ctx context.Context) *trackedConn {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.Addr.(trackedAddr); ok {
			return a.c
		}
	}
	return nil
}

// authenticated reports whether ctx's call comes over a connection that
// has made an authenticated call (always true without a token).
func (g *guard) authenticated(ctx context.Context) bool {
	return g.proven(connOf(ctx))
}

// proven reports whether c (nil: not tracked) has made an authenticated
// call (always true without a token).
func (g *guard) proven(c *trackedConn) bool {
	if !g.token {
		return true
	}
	if c == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return c.elem == nil
}

// healthSlot takes one of the MaxUnauthenticatedStreams slots, and one
// of its connection's MaxUnauthenticatedStreamsPerConnection, for a
// health call on an unauthenticated connection; release gives them back.
func (g *guard) healthSlot(ctx context.Context, method string) (release func(), err error) {
	if !strings.HasPrefix(method, healthService) || g.authenticated(ctx) {
		return func() {}, nil
	}
	c := connOf(ctx)
	if c == nil {
		return nil, status.Error(codes.Unauthenticated, "health calls without the token need a connection the server tracks")
	}
	if c.health.Add(1) > MaxUnauthenticatedStreamsPerConnection {
		c.health.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "too many health calls on this unauthenticated connection (%d)", MaxUnauthenticatedStreamsPerConnection)
	}
	select {
	case g.health <- struct{}{}:
		return func() { <-g.health; c.health.Add(-1) }, nil
	default:
		c.health.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "too many health calls from unauthenticated connections (%d)", MaxUnauthenticatedStreams)
	}
}

// tap runs for every new call, after its headers and before any of its
// request is read (grpc.InTapHandle): with tokens, a call without a valid
// one is refused here, UNAUTHENTICATED (grpc.health.v1 excepted), so
// that no request of a caller without the token is ever held; a call
// with one marks its connection authenticated. Every call gets its
// callLimit (limits.go): its method's request limit and its hold on the
// receive budget, given back when its stream ends. A health call of a
// connection that has not authenticated takes requests of at most
// MaxUnauthenticatedRequestBytes, from the unauthenticated calls' budget.
func (g *guard) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	c := connOf(ctx)
	health := strings.HasPrefix(info.FullMethodName, healthService)
	if g.tokens != nil && !health {
		if _, err := checkBearer(ctx, g.tokens); err != nil {
			return nil, err
		}
		if c != nil {
			c.prove()
		}
	}
	if c == nil {
		return ctx, nil
	}
	if f := c.frames.Load(); f != nil {
		l := &callLimit{method: info.FullMethodName, limit: uint32(requestLimit(info.FullMethodName)), acct: f.acct}
		if health && !g.proven(c) {
			l.limit, l.acct = MaxUnauthenticatedRequestBytes, f.unauth
		}
		// gRPC cancels ctx when the stream ends, however it ends.
		context.AfterFunc(ctx, l.finish)
		f.pending = l
		ctx = context.WithValue(ctx, callLimitKey{}, l)
	}
	return ctx, nil
}

func (g *guard) serverOptions() []grpc.ServerOption {
	return append([]grpc.ServerOption{
		grpc.InTapHandle(g.tap),
		grpc.MaxConcurrentStreams(MaxStreamsPerConnection),
		grpc.ConnectionTimeout(HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: MaxConnectionIdle, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			release, err := g.healthSlot(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			defer release()
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			release, err := g.healthSlot(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			defer release()
			return h(srv, ss)
		}),
	}, limitOptions()...)
}

// guardListener admits connections through the guard and never hands a
// transient accept error (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED)
// to the server: it backs off (5 ms doubling to 1 s) and tries again.
type guardListener struct {
	net.Listener
	g *guard
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := acceptBackoff(l.Listener)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, g: l.g, peer: peerKey(c)}
		addr := c.RemoteAddr()
		if addr == nil {
			addr = &net.UnixAddr{Net: "unix"}
		}
		tc.addr = trackedAddr{Addr: addr, c: tc}
		for {
			ok, victim := l.g.admit(tc)
			if ok {
				return tc, nil
			}
			if victim == nil {
				_ = c.Close()
				break
			}
			_ = victim.Close()
		}
	}
}

// acceptBackoff accepts from l, waiting out transient errors.
func acceptBackoff(l net.Listener) (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err == nil || !transientAcceptError(err) {
			return c, err
		}
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		time.Sleep(delay)
	}
}

func transientAcceptError(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// BackoffListener returns l whose Accept waits out transient errors
// (EMFILE and the like) with a backoff of 5 ms doubling to 1 s instead of
// returning them, so that a server never spins on them.
func BackoffListener(l net.Listener) net.Listener { return backoffListener{l} }

type backoffListener struct{ net.Listener }

func (l backoffListener) Accept() (net.Conn, error) { return acceptBackoff(l.Listener) }

// peerKey names the peer of c for the per-peer bound: its IP address over
// TCP, its uid over a unix socket (peerUID).
func peerKey(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return "ip:" + a.IP.String()
	}
	if uc, ok := c.(*net.UnixConn); ok {
		if uid, ok := peerUID(uc); ok {
			return "uid:" + uid
		}
	}
	return "local"
}
