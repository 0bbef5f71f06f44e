//go:build linux

package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// TestUnauthenticatedConnectionsLeaveAReserve: with a token, clients
// without it may open connections and hold grpc.health.v1 Watch streams
// (health is exempt from the token), but no more than the connection
// bound less the reserve stay open, and a caller with the token still
// connects, runs an execution, and keeps its connection while more
// unauthenticated ones arrive.
func TestUnauthenticatedConnectionsLeaveAReserve(t *testing.T) {
	requireSandbox(t)
	const (
		token    = "itest-token-0123456789abcdef"
		maxConns = 40
		reserved = 10
		attack   = 60
	)
	in, err := startInstanceOn("connections", queueSlot, 4, 2, 5*time.Second, func(tc *transport.Config) {
		tc.Token = token
		tc.MaxConnections, tc.MaxConnectionsPerPeer, tc.ReservedConnections = maxConns, maxConns, reserved
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var alive, ended atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// watchers opens n unauthenticated connections, each with a Watch.
	watchers := func(n int) {
		for range n {
			conn, err := grpc.NewClient(in.tc.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				defer ended.Add(1)
				w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
				if err != nil {
					return
				}
				if _, err := w.Recv(); err != nil {
					return
				}
				alive.Add(1)
				defer alive.Add(-1)
				for {
					if _, err := w.Recv(); err != nil {
						return
					}
				}
			}()
		}
	}
	// settle polls until every watcher has either a live stream or has
	// ended, and no more than the unauthenticated share is alive.
	settle := func(total int64) {
		t.Helper()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(20 * time.Second)
		for {
			a, e := alive.Load(), ended.Load()
			if a+e == total && a <= maxConns-reserved {
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("%d unauthenticated health streams stay open (%d ended of %d); want at most %d", a, e, total, maxConns-reserved)
			}
		}
	}
	watchers(attack)
	settle(attack)

	authed := in.dial(t)
	resp, err := authed.Execute(ctx, shellReq("echo with-token", 0))
	if err != nil || resp.GetOutput() != "with-token\n" {
		t.Fatalf("authenticated Execute while unauthenticated connections are at their bound: %v %v", err, resp)
	}
	// Its connection stays: a Watch on it outlives another wave.
	conn, err := in.tc.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := sandboxv1.NewSandboxServiceClient(conn).HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	mine, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Recv(); err != nil {
		t.Fatal(err)
	}
	watchers(attack)
	settle(2 * attack)
	if resp, err := authed.Execute(ctx, shellReq("echo still", 0)); err != nil || resp.GetOutput() != "still\n" {
		t.Fatalf("authenticated Execute after a second wave: %v %v", err, resp)
	}
	cancel()
	if _, err := mine.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("the authenticated connection's Watch ended with %v before the test cancelled it: the connection was closed", err)
	}
}
