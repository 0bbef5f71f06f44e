package transport

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestUnauthenticatedReceiveBudget: with a token, health calls of
// connections that have not authenticated take requests of at most
// MaxUnauthenticatedRequestBytes, from a budget of their own: 8
// tokenless connections with 128 Check streams each declaring 64 KiB
// (what would hold the whole receive budget) are refused as the prefix
// arrives and hold nothing, and a caller with the token gets its
// Execute through; tokenless prefixes within the limit hold at most
// UnauthenticatedReceiveBudgetPerConnection of a connection, nothing of
// the receive budget, and give it back when the connection closes; an
// authenticated connection's health calls take MaxSmallRequestBytes.
func TestUnauthenticatedReceiveBudget(t *testing.T) {
	srv := &sizes{}
	c, g := serveWithGuard(t, Config{Token: goodToken}, srv)
	var tokenless []*frameClient
	for range 8 {
		fc := dialFrames(t, c.SocketPath)
		for i := range uint32(MaxStreamsPerConnection) {
			fc.headers(1+2*i, healthpb.Health_Check_FullMethodName, false)
			fc.send(1+2*i, msgPrefix(MaxSmallRequestBytes), false)
		}
		fc.sync()
		tokenless = append(tokenless, fc)
	}
	if n := g.recv.used.Load(); n != 0 {
		t.Fatalf("tokenless health calls hold %d bytes of the receive budget", n)
	}
	for _, fc := range tokenless {
		refused(t, fc, 1, MaxStreamsPerConnection, "Check takes request messages of at most 1024 bytes")
	}

	// Within the limit: a connection's share of the unauthenticated
	// budget, and no more.
	fc := dialFrames(t, c.SocketPath)
	const streams = 2 * UnauthenticatedReceiveBudgetPerConnection / MaxUnauthenticatedRequestBytes
	for i := range uint32(streams) {
		fc.headers(1+2*i, healthpb.Health_Check_FullMethodName, false)
		fc.send(1+2*i, msgPrefix(MaxUnauthenticatedRequestBytes), false)
	}
	fc.sync()
	if n := g.unauth.used.Load(); n != UnauthenticatedReceiveBudgetPerConnection {
		t.Fatalf("tokenless health calls within the limit hold %d bytes, want the connection's share %d", n, UnauthenticatedReceiveBudgetPerConnection)
	}
	refused(t, fc, 1+2*streams/2, streams/2, "one connection")
	if n := g.recv.used.Load(); n != 0 {
		t.Fatalf("tokenless health calls hold %d bytes of the receive budget", n)
	}

	// A caller with the token.
	c.Token = goodToken
	conn, err := c.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sandboxv1.NewSandboxServiceClient(conn).Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}}); err != nil {
		t.Fatalf("an Execute with the token while tokenless calls hold what they may: %v", err)
	}
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: strings.Repeat("s", 2*MaxUnauthenticatedRequestBytes)}); grpcstatus.Code(err) != codes.NotFound {
		t.Fatalf("a 2 KiB health check on an authenticated connection: %v, want NOT_FOUND (the service is unknown)", err)
	}
	// A tokenless health check still works.
	if err := check(t, Config{SocketPath: c.SocketPath}); err != nil {
		t.Fatalf("a tokenless health check: %v", err)
	}
	fc.nc.Close()
	eventually(t, "the unauthenticated budget given back at the close", func() bool { return g.unauth.used.Load() == 0 })
}

// refused checks that the n streams from id on ended RESOURCE_EXHAUSTED,
// one at least with a message saying why: the others may have been
// refused for the unauthenticated health calls of their connection (the
// refusals run together).
func refused(t *testing.T, fc *frameClient, id uint32, n int, why string) {
	t.Helper()
	said := false
	for i := range uint32(n) {
		s := fc.end(id + 2*i)
		if !strings.HasPrefix(s, "grpc-status=8 ") {
			t.Fatalf("stream %d: %q, want RESOURCE_EXHAUSTED (%s)", id+2*i, s, why)
		}
		said = said || strings.Contains(s, why)
	}
	if !said {
		t.Fatalf("no stream from %d was refused saying %q", id, why)
	}
}
