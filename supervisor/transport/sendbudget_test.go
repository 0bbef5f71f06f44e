package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/peer"
)

// sinkConn is a connection whose writes all succeed at once.
type sinkConn struct{ net.Conn }

func (sinkConn) Write(p []byte) (int, error) { return len(p), nil }
func (sinkConn) Close() error                { return nil }

// budgetConns returns a guard and n connections it tracks, each with the
// context of a call on it.
func budgetConns(t *testing.T, n int) (*guard, []*trackedConn, []context.Context) {
	t.Helper()
	g := newGuard(1024, 1024, 0, 0, nil, nil)
	conns := make([]*trackedConn, n)
	ctxs := make([]context.Context, n)
	for i := range conns {
		c := &trackedConn{Conn: sinkConn{}, g: g, peer: "local"}
		c.addr = trackedAddr{Addr: &net.UnixAddr{Net: "unix"}, c: c}
		if ok, _ := g.admit(c); !ok {
			t.Fatal("not admitted")
		}
		conns[i] = c
		ctxs[i] = peer.NewContext(context.Background(), &peer.Peer{Addr: c.addr})
	}
	return g, conns, ctxs
}

func unsent(g *guard) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unsent
}

func waiters(g *guard) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nwait
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
	}
}

// TestReserveBoundsTheServer: reservations taken before responses are
// built hold the server to MaxUnsentBytes in all, whatever the number of
// connections (each holding less than its own bound); one more waits
// until written bytes make room, and gives up with its context.
func TestReserveBoundsTheServer(t *testing.T) {
	const page = 4 << 20
	n := MaxUnsentBytes / page
	g, conns, ctxs := budgetConns(t, n+2)
	for i := range n {
		if _, err := Reserve(ctxs[i], page); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
	}
	if got := unsent(g); got != MaxUnsentBytes {
		t.Fatalf("unsent %d, want %d", got, MaxUnsentBytes)
	}
	short, cancel := context.WithTimeout(ctxs[n], 50*time.Millisecond)
	defer cancel()
	if _, err := Reserve(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reservation past the server's budget: %v, want it to wait until its context ends", err)
	}
	if waiters(g) != 0 || unsent(g) != MaxUnsentBytes {
		t.Fatalf("a waiter that gave up left %d waiters, %d unsent", waiters(g), unsent(g))
	}
	done := make(chan error, 1)
	go func() {
		_, err := Reserve(ctxs[n], page)
		done <- err
	}()
	waitFor(t, "the reservation waits", func() bool { return waiters(g) == 1 })
	// Half a page written on another connection is not room enough...
	if _, err := conns[0].Write(make([]byte, page/2)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("granted with half the room: %v", err)
	default:
	}
	// ...the whole page is.
	if _, err := conns[0].Write(make([]byte, page/2)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("after a page was written: %v", err)
	}
	if got := unsent(g); got != MaxUnsentBytes {
		t.Fatalf("unsent %d, want %d", got, MaxUnsentBytes)
	}
}

// TestReserveInOrder: a large reservation that waits for the server's
// budget is not overtaken by smaller ones that would fit, on other
// connections; one that waits for its own connection's bound holds back
// nobody else.
func TestReserveInOrder(t *testing.T) {
	const page = 4 << 20
	n := MaxUnsentBytes / page
	g, conns, ctxs := budgetConns(t, n+3)
	for i := range n {
		if _, err := Reserve(ctxs[i], page); err != nil {
			t.Fatal(err)
		}
	}
	big, small := make(chan error, 1), make(chan error, 1)
	go func() { _, err := Reserve(ctxs[n], page); big <- err }()
	waitFor(t, "the large reservation waits", func() bool { return waiters(g) == 1 })
	go func() { _, err := Reserve(ctxs[n+1], 1); small <- err }()
	waitFor(t, "the small reservation waits", func() bool { return waiters(g) == 2 })
	if _, err := conns[0].Write(make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-small:
		t.Fatalf("the small reservation overtook the large one: %v", err)
	default:
	}
	if _, err := conns[1].Write(make([]byte, page)); err != nil {
		t.Fatal(err)
	}
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if _, err := conns[2].Write(make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	// A connection at its own bound waits alone.
	if _, err := conns[4].Write(make([]byte, page)); err != nil {
		t.Fatal(err)
	}
	if _, err := Reserve(ctxs[n+2], MaxUnsentBytesPerConnection); err != nil {
		t.Fatal(err)
	}
	own := make(chan error, 100)
	for range 100 {
		go func() { _, err := Reserve(ctxs[n+2], 1); own <- err }()
	}
	waitFor(t, "the connection's own reservations wait", func() bool { return waiters(g) == 100 })
	g.mu.Lock()
	ready := g.ready.Len()
	g.mu.Unlock()
	if ready != 0 {
		t.Fatalf("%d reservations waiting for their connection are among those granting walks", ready)
	}
	if _, err := conns[3].Write(make([]byte, page)); err != nil {
		t.Fatal(err)
	}
	if _, err := Reserve(ctxs[3], 1); err != nil {
		t.Fatalf("another connection behind a connection at its bound: %v", err)
	}
	if _, err := conns[n+2].Write(make([]byte, MaxUnsentBytesPerConnection)); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := <-own; err != nil {
			t.Fatal(err)
		}
	}
}

// TestReserveSettleAndRelease: Settle gives back what a response did not
// use, or counts what it used beyond its reservation; Release gives back
// all; a connection with nothing unsent takes one response larger than
// its bound; closing a connection gives back what it held and wakes a
// waiter of another.
func TestReserveSettleAndRelease(t *testing.T) {
	g, conns, ctxs := budgetConns(t, 2)
	r, err := Reserve(ctxs[0], 2*MaxUnsentBytesPerConnection)
	if err != nil {
		t.Fatalf("one response past the connection's bound on a connection holding none: %v", err)
	}
	r.Settle(100)
	if got := unsent(g); got != 100 {
		t.Fatalf("after Settle(100): %d unsent", got)
	}
	r.Settle(0) // once only
	if got := unsent(g); got != 100 {
		t.Fatalf("a second Settle changed the account: %d unsent", got)
	}
	r, _ = Reserve(ctxs[0], 100)
	r.Settle(300)
	if got := unsent(g); got != 400 {
		t.Fatalf("after Settle past the reservation: %d unsent, want 400", got)
	}
	r, _ = Reserve(ctxs[0], 1000)
	r.Release()
	if got := unsent(g); got != 400 {
		t.Fatalf("after Release: %d unsent, want 400", got)
	}
	var none *Reservation
	none.Settle(5) // a nil reservation accounts nothing
	if r, err := Reserve(context.Background(), 1<<30); err != nil {
		t.Fatal(err)
	} else {
		r.Settle(1 << 30) // an untracked call accounts nothing
	}
	if got := unsent(g); got != 400 {
		t.Fatalf("untracked calls changed the account: %d", got)
	}
	// Fill the server from connection 0; connection 1 waits.
	short, cancel := context.WithTimeout(ctxs[0], 50*time.Millisecond)
	defer cancel()
	if _, err := Reserve(short, MaxUnsentBytes); err == nil {
		t.Fatal("a connection holding bytes took a response past its bound")
	}
	if _, err := conns[0].Write(make([]byte, 400)); err != nil {
		t.Fatal(err)
	}
	if _, err := Reserve(ctxs[0], MaxUnsentBytes); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Reserve(ctxs[1], 1); done <- err }()
	waitFor(t, "the reservation waits", func() bool { return waiters(g) == 1 })
	conns[0].Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := unsent(g); got != 1 {
		t.Fatalf("after the close: %d unsent, want 1", got)
	}
}

// TestReserveGivesUpWithoutProgress: a reservation waits for as long as
// bytes are being written, and fails with ErrSendBacklog once sendWait
// passed with none written.
func TestReserveGivesUpWithoutProgress(t *testing.T) {
	defer func(d time.Duration) { sendWait = d }(sendWait)
	sendWait = 100 * time.Millisecond
	g, conns, ctxs := budgetConns(t, 2)
	if _, err := Reserve(ctxs[0], MaxUnsentBytes); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Reserve(ctxs[1], 2); done <- err }()
	waitFor(t, "the reservation waits", func() bool { return waiters(g) == 1 })
	// Writes that keep the backlog moving for 4 × sendWait.
	for end := time.Now().Add(4 * sendWait); time.Now().Before(end); time.Sleep(sendWait / 10) {
		if _, err := conns[0].Write(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("gave up while bytes were written: %v", err)
		default:
		}
		// Keep the server full: the written byte's room is taken back.
		g.mu.Lock()
		conns[0].unsent.Add(1)
		g.unsent++
		g.mu.Unlock()
	}
	if err := <-done; !errors.Is(err, ErrSendBacklog) {
		t.Fatalf("without progress: %v, want ErrSendBacklog", err)
	}
	if waiters(g) != 0 {
		t.Fatal("the waiter that gave up is still queued")
	}
}
