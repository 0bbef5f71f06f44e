package transport

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// shortSocket returns a unix socket path short enough for sun_path.
func shortSocket(t *testing.T) string {
	dir, err := os.MkdirTemp("", "tg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// serveGuarded serves grpc.health.v1 through ListenServer on a unix
// socket and returns the socket's Config.
func serveGuarded(t *testing.T, c Config) Config {
	t.Helper()
	c.SocketPath = shortSocket(t)
	lis, opts, err := c.ListenServer()
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return c
}

// watch opens a connection without the token and a Watch on it; it
// returns whether the stream delivered its first message, and the stream's
// end (closed at the test's end).
func watch(t *testing.T, c Config) (ok bool, ended <-chan error) {
	t.Helper()
	conn, err := grpc.NewClient(c.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	if err != nil {
		return false, nil
	}
	ch := make(chan error, 1)
	go func() {
		for {
			if _, err := w.Recv(); err != nil {
				ch <- err
				return
			}
		}
	}()
	return true, ch
}

// TestConnectionsPerPeer: past MaxConnectionsPerPeer, a peer's new
// connections are closed at once; its earlier ones are untouched.
func TestConnectionsPerPeer(t *testing.T) {
	c := serveGuarded(t, Config{MaxConnectionsPerPeer: 3})
	var live []<-chan error
	for i := range 5 {
		ok, ended := watch(t, c)
		if ok != (i < 3) {
			t.Fatalf("connection %d served %v, want %v", i, ok, i < 3)
		}
		if ok {
			live = append(live, ended)
		}
	}
	for i, ended := range live {
		select {
		case err := <-ended:
			t.Errorf("connection %d closed: %v", i, err)
		default:
		}
	}
}

// TestUnauthenticatedHealthCalls: with a token, grpc.health.v1 calls on
// connections that have not authenticated are bounded all together
// (MaxUnauthenticatedStreams) and per connection
// (MaxUnauthenticatedStreamsPerConnection); past them they end
// RESOURCE_EXHAUSTED.
func TestUnauthenticatedHealthCalls(t *testing.T) {
	c := serveGuarded(t, Config{Token: goodToken, MaxConnectionsPerPeer: 1000, MaxConnections: 1000})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := func() healthpb.HealthClient {
		conn, err := grpc.NewClient(c.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return healthpb.NewHealthClient(conn)
	}
	// Each connection may carry MaxUnauthenticatedStreamsPerConnection.
	var clients []healthpb.HealthClient
	for range MaxUnauthenticatedStreams / MaxUnauthenticatedStreamsPerConnection {
		clients = append(clients, client())
	}
	for i := range MaxUnauthenticatedStreams {
		w, err := clients[i%len(clients)].Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	if _, err := clients[0].Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "on this unauthenticated connection") {
		t.Fatalf("health call past the connection's bound: %v, want RESOURCE_EXHAUSTED", err)
	}
	_, err := client().Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("health call past the bound: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// flakyListener fails its first Accepts with EMFILE.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	calls int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.calls++
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptWaitsOutEMFILE: an accept that fails for lack of descriptors
// is retried after a backoff, never returned to the server (which would
// log and spin), and a closed listener still ends Accept.
func TestAcceptWaitsOutEMFILE(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: inner, fails: 4}
	l := BackoffListener(fl)
	if c, err := net.Dial("tcp", inner.Addr().String()); err == nil {
		defer c.Close()
	}
	start := time.Now()
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v; transient errors must be waited out", err)
	}
	c.Close()
	// 5 + 10 + 20 + 40 ms of backoff at least.
	if d := time.Since(start); d < 75*time.Millisecond || fl.calls != 5 {
		t.Errorf("Accept took %v over %d calls; want a backoff between the 5", d, fl.calls)
	}
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener: %v", err)
	}
}
