package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/workerv1"
)

// Loopback endpoints of the credential-free proxies, in the sandbox's own
// network namespace (supervisor.SandboxKubeURL, SandboxPrometheusURL).
var proxyListeners = map[string]string{
	"kubernetes": "127.0.0.1:8001",
	"prometheus": "127.0.0.1:9090",
}

// maxProxyBody bounds a request body read from sandboxed code.
const maxProxyBody = 4 << 20

// proxy serves the sandbox's Kubernetes and Prometheus endpoints: each HTTP
// request is forwarded over the go-plugin broker to the supervisor's
// HostProxy, which applies its policy and adds the credentials. Nothing of
// the credentials ever enters the sandbox.
type proxy struct {
	conn    *grpc.ClientConn
	servers []*http.Server
}

// startProxy dials the supervisor's HostProxy (broker id) and starts the
// loopback listeners.
func startProxy(b *goplugin.GRPCBroker, id uint32) (*proxy, error) {
	if b == nil {
		return nil, errors.New("no go-plugin broker")
	}
	// Small flow-control windows (no BDP growth): what the supervisor
	// streams ahead of the program's reads stays within 256 KiB a request
	// and 1 MiB in all, in this sandbox's memory.
	conn, err := b.DialWithOptions(id, grpc.WithInitialWindowSize(256<<10), grpc.WithInitialConnWindowSize(1<<20))
	if err != nil {
		return nil, fmt.Errorf("dial host proxy: %w", err)
	}
	p := &proxy{conn: conn}
	client := workerv1.NewHostProxyClient(conn)
	for target, addr := range proxyListeners {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("listen %s for %s: %w", addr, target, err)
		}
		srv := &http.Server{Handler: forwarder(client, target), ReadHeaderTimeout: 10 * time.Second}
		p.servers = append(p.servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	return p, nil
}

// sessionProxy is the one proxy of a session sandbox. The supervisor
// serves its broker stream once per sandbox and names the same stream in
// every exec (a go-plugin broker stream takes one connection); the first
// exec that names it starts the proxy, which then serves until the worker
// exits.
type sessionProxy struct {
	mu sync.Mutex
	id uint32 // the broker stream of p; 0: not started
	p  *proxy
}

// start starts the proxy on broker stream id unless it runs already.
// Errors: codes.InvalidArgument when it runs on another stream;
// codes.Unavailable when it cannot start (the exec then fails to start,
// and a later exec tries again).
func (sp *sessionProxy) start(b *goplugin.GRPCBroker, id uint32) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case sp.p != nil && sp.id == id:
		return nil
	case sp.p != nil:
		return status.Errorf(codes.InvalidArgument, "the sandbox's Kubernetes/Prometheus proxy serves broker stream %d, not %d", sp.id, id)
	}
	p, err := startProxy(b, id)
	if err != nil {
		return status.Error(codes.Unavailable, "start the Kubernetes/Prometheus proxy: "+err.Error())
	}
	sp.id, sp.p = id, p
	return nil
}

func (p *proxy) close() {
	for _, s := range p.servers {
		_ = s.Close()
	}
	_ = p.conn.Close()
}

// proxyChunk is the largest body chunk sent in one message
// (hostproxy.ChunkBytes).
const proxyChunk = 32 << 10

// forwarder turns each HTTP request into a HostProxy.RoundTrip call,
// streaming both bodies in chunks (proto/PROTOCOL.md): neither is held
// whole here or in the supervisor. A response cut short by the supervisor
// aborts the connection, so the program never takes a cut body for a
// whole one.
func forwarder(client workerv1.HostProxyClient, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxProxyBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stream, err := client.RoundTrip(ctx)
		if err != nil {
			http.Error(w, "execfarm proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		head := &workerv1.ProxyRequest{Target: target, Method: r.Method, Path: r.URL.RequestURI(), ContentLength: r.ContentLength}
		for _, k := range []string{"Accept", "Content-Type", "User-Agent"} {
			if v := r.Header.Values(k); len(v) > 0 {
				head.Headers = append(head.Headers, &workerv1.Header{Name: k, Values: v})
			}
		}
		if err := stream.Send(&workerv1.ProxyRequestPart{Part: &workerv1.ProxyRequestPart_Head{Head: head}}); err != nil {
			http.Error(w, "execfarm proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		if r.ContentLength != 0 {
			if status, msg := sendBody(stream, r.Body); status != 0 {
				http.Error(w, msg, status)
				return
			}
		}
		if err := stream.CloseSend(); err != nil {
			http.Error(w, "execfarm proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		first, err := stream.Recv()
		if err != nil || first.GetHead() == nil {
			http.Error(w, fmt.Sprintf("execfarm proxy: no response head: %v", err), http.StatusBadGateway)
			return
		}
		resp := first.GetHead()
		for _, h := range resp.GetHeaders() {
			for _, v := range h.GetValues() {
				w.Header().Add(h.GetName(), v)
			}
		}
		w.WriteHeader(int(resp.GetStatus()))
		flusher, _ := w.(http.Flusher)
		for {
			part, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				// Cut short: abort the connection (no clean end of body).
				panic(http.ErrAbortHandler)
			}
			if _, err := w.Write(part.GetBody()); err != nil {
				return // the program went away; cancel ends the call
			}
			if flusher != nil {
				flusher.Flush() // watches: each event as it comes
			}
		}
	})
}

// sendBody streams body in proxyChunk parts, at most maxProxyBody bytes;
// it returns an HTTP status and message when the request must be answered
// here instead.
func sendBody(stream workerv1.HostProxy_RoundTripClient, body io.Reader) (int, string) {
	buf := make([]byte, proxyChunk)
	var total int64
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if total += int64(n); total > maxProxyBody {
				return http.StatusRequestEntityTooLarge, "request body too large"
			}
			if serr := stream.Send(&workerv1.ProxyRequestPart{Part: &workerv1.ProxyRequestPart_Body{Body: buf[:n]}}); serr != nil {
				return http.StatusBadGateway, "execfarm proxy: " + serr.Error()
			}
		}
		if errors.Is(err, io.EOF) {
			return 0, ""
		}
		if err != nil {
			return http.StatusBadRequest, "read request body: " + err.Error()
		}
	}
}
