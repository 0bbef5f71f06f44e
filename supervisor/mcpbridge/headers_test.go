package mcpbridge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/netutil"
)

// TestSlowHeadersOfOneAddress: a client address that opens connections
// and never finishes their headers holds at most its bound of them (the
// next are closed as they are accepted), so a client from another
// address is served at once, not after the server's ReadHeaderTimeout
// frees a slot (a red-team pass held all 256 slots of `mcp --http`
// without a token and delayed every other connection 12-15 s).
func TestSlowHeadersOfOneAddress(t *testing.T) {
	const slots, perAddress, readHeader = 4, 2, 20 * time.Second
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	guard := NewHeaderGuard(perAddress)
	srv := &http.Server{
		Handler:           guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })),
		ConnState:         guard.ConnState,
		ReadHeaderTimeout: readHeader,
	}
	go func() { _ = srv.Serve(netutil.LimitListener(guard.Listener(lis), slots)) }()
	defer srv.Close()
	addr := lis.Addr().String()

	// The attacker, from 127.0.0.1: twice the slots, each with a header
	// line and no end.
	var held []net.Conn
	for range 2 * slots {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: mcp\r\n"); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Those past the bound are closed (read: EOF), the others stay
	// open; the count is the guard's.
	open := 0
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	if open > perAddress {
		t.Errorf("%d connections with unfinished headers held from one address, want at most %d", open, perAddress)
	}

	// Another client, from 127.0.0.2, is answered well within the
	// header timeout.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: mcp\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a client of another address, with the slots under attack: %v (it waits for the attacker's header timeout)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("another client: HTTP %d", resp.StatusCode)
	}
	// Its headers done, it no longer counts; the attacker's still do.
	if n := guard.Pending("127.0.0.2"); n != 0 {
		t.Errorf("127.0.0.2 still pending %d after its request", n)
	}
	if n := guard.Pending("127.0.0.1"); n != perAddress {
		t.Errorf("127.0.0.1 pending %d, want %d", n, perAddress)
	}
}
