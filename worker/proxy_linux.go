package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

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
	conn, err := b.Dial(id)
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

func (p *proxy) close() {
	for _, s := range p.servers {
		_ = s.Close()
	}
	_ = p.conn.Close()
}

// forwarder turns HTTP requests into HostProxy.RoundTrip calls.
func forwarder(client workerv1.HostProxyClient, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxProxyBody+1))
		if err != nil {
			http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxProxyBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		req := &workerv1.ProxyRequest{Target: target, Method: r.Method, Path: r.URL.RequestURI(), Body: body}
		for _, k := range []string{"Accept", "Content-Type", "User-Agent"} {
			if v := r.Header.Values(k); len(v) > 0 {
				req.Headers = append(req.Headers, &workerv1.Header{Name: k, Values: v})
			}
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		resp, err := client.RoundTrip(ctx, req)
		if err != nil {
			http.Error(w, "execfarm proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		for _, h := range resp.GetHeaders() {
			for _, v := range h.GetValues() {
				w.Header().Add(h.GetName(), v)
			}
		}
		w.WriteHeader(int(resp.GetStatus()))
		_, _ = w.Write(resp.GetBody())
	})
}
