package execution

import (
	"context"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
)

// proxyServer is the supervisor's HostProxy: it answers the worker's
// forwarded HTTP requests through the configured targets.
type proxyServer struct {
	workerv1.UnimplementedHostProxyServer
	kube *hostproxy.Kube
	prom *hostproxy.Prometheus
}

// RoundTrip forwards one request to its target; an unconfigured target is
// answered 503 (an HTTP answer, not an RPC error: the program sees it).
func (p *proxyServer) RoundTrip(ctx context.Context, req *workerv1.ProxyRequest) (*workerv1.ProxyResponse, error) {
	var t hostproxy.Target
	switch req.GetTarget() {
	case "kubernetes":
		if p.kube != nil {
			t = p.kube
		}
	case "prometheus":
		if p.prom != nil {
			t = p.prom
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown proxy target %q", req.GetTarget())
	}
	if t == nil {
		return &workerv1.ProxyResponse{Status: http.StatusServiceUnavailable, Body: []byte(req.GetTarget() + " is not configured on this execfarm server\n")}, nil
	}
	h := http.Header{}
	for _, kv := range req.GetHeaders() {
		h[http.CanonicalHeaderKey(kv.GetName())] = kv.GetValues()
	}
	resp, err := t.RoundTrip(ctx, hostproxy.Request{Method: req.GetMethod(), Path: req.GetPath(), Header: h, Body: req.GetBody()})
	if err != nil {
		return &workerv1.ProxyResponse{Status: http.StatusBadGateway, Body: []byte(err.Error() + "\n")}, nil
	}
	out := &workerv1.ProxyResponse{Status: int32(resp.Status), Body: resp.Body}
	for k, v := range resp.Header {
		out.Headers = append(out.Headers, &workerv1.Header{Name: k, Values: v})
	}
	return out, nil
}
