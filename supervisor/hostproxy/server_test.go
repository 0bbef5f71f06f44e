package hostproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/execfarm/execfarm/proto/workerv1"
)

// TestServerBoundsRequestsInFlight: however many calls the workers make,
// at most MaxRequests reach the upstream at once; the others wait and
// complete once there is room; a body larger than one message arrives
// whole, in chunks of at most ChunkBytes.
func TestServerBoundsRequestsInFlight(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		<-release
		fmt.Fprint(w, strings.Repeat("y", 3*ChunkBytes+5))
	}))
	defer upstream.Close()
	prom, err := NewPrometheus(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer prom.CloseIdleConnections()
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	workerv1.RegisterHostProxyServer(g, NewServer(nil, prom))
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const calls = MaxRequests + 16
	results := make(chan string, calls)
	for range calls {
		go func() {
			st, err := workerv1.NewHostProxyClient(conn).RoundTrip(ctx)
			if err == nil {
				err = st.Send(&workerv1.ProxyRequestPart{Part: &workerv1.ProxyRequestPart_Head{Head: &workerv1.ProxyRequest{
					Target: "prometheus", Method: "GET", Path: "/api/v1/query?query=up"}}})
			}
			if err == nil {
				err = st.CloseSend()
			}
			var body strings.Builder
			for err == nil {
				var p *workerv1.ProxyResponsePart
				if p, err = st.Recv(); err == nil {
					if len(p.GetBody()) > ChunkBytes {
						err = fmt.Errorf("a chunk of %d bytes", len(p.GetBody()))
					}
					body.Write(p.GetBody())
				}
			}
			if err != io.EOF {
				results <- err.Error()
				return
			}
			results <- body.String()
		}()
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		n := inFlight
		mu.Unlock()
		if n == MaxRequests {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%d requests reached the upstream, want %d", n, MaxRequests)
		}
	}
	close(release)
	for range calls {
		if got := <-results; got != strings.Repeat("y", 3*ChunkBytes+5) {
			t.Fatalf("a call ended with %.80q", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != MaxRequests {
		t.Fatalf("the upstream had %d requests in flight at once, want at most %d", peak, MaxRequests)
	}
}
