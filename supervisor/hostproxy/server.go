package hostproxy

import (
	"errors"
	"io"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/workerv1"
)

// Server is the supervisor's HostProxy service (workerv1): it forwards the
// requests the workers stream to it through the configured targets and
// streams the answers back. One Server serves every sandbox (register it
// on each sandbox's broker server, made with BrokerOptions); it bounds
// the requests in flight of all of them together by MaxRequests.
type Server struct {
	workerv1.UnimplementedHostProxyServer
	kube  *Kube
	prom  *Prometheus
	slots chan struct{}
}

// NewServer returns a Server for the targets (nil: not configured, answered
// 503).
func NewServer(kube *Kube, prom *Prometheus) *Server {
	return &Server{kube: kube, prom: prom, slots: make(chan struct{}, MaxRequests)}
}

// BrokerOptions are the options of one sandbox's broker gRPC server: at
// most MaxRequestsPerSandbox calls at once, and messages no larger than a
// body chunk and a head need.
func BrokerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxConcurrentStreams(MaxRequestsPerSandbox), grpc.MaxRecvMsgSize(1 << 20)}
}

// RoundTrip forwards one request (see the protocol in worker.proto). An
// unconfigured target is answered 503 and an upstream that cannot be
// reached 502 (HTTP answers, not RPC errors: the program sees them); an
// error while the body streams ends the call, and the worker then aborts
// the sandbox's connection, so a cut body never passes for a whole one.
func (s *Server) RoundTrip(stream workerv1.HostProxy_RoundTripServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	head := first.GetHead()
	if head == nil {
		return status.Error(codes.InvalidArgument, "hostproxy: the first message must be the request's head")
	}
	var t Target
	switch head.GetTarget() {
	case "kubernetes":
		if s.kube != nil {
			t = s.kube
		}
	case "prometheus":
		if s.prom != nil {
			t = s.prom
		}
	default:
		return status.Errorf(codes.InvalidArgument, "unknown proxy target %q", head.GetTarget())
	}
	if t == nil {
		return sendResponse(stream, errorResponse(http.StatusServiceUnavailable, head.GetTarget()+" is not configured on this execfarm server"))
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.slots }()
	h := http.Header{}
	for _, kv := range head.GetHeaders() {
		h[http.CanonicalHeaderKey(kv.GetName())] = kv.GetValues()
	}
	req := Request{Method: head.GetMethod(), Path: head.GetPath(), Header: h, ContentLength: head.GetContentLength()}
	if req.ContentLength != 0 {
		req.Body = &partReader{stream: stream}
	}
	resp, err := t.RoundTrip(ctx, req)
	if err != nil {
		resp = errorResponse(http.StatusBadGateway, err.Error())
	}
	return sendResponse(stream, resp)
}

// sendResponse streams resp to the worker and closes its body.
func sendResponse(stream workerv1.HostProxy_RoundTripServer, resp Response) error {
	defer resp.Body.Close()
	out := &workerv1.ProxyResponse{Status: int32(resp.Status)}
	for k, v := range resp.Header {
		out.Headers = append(out.Headers, &workerv1.Header{Name: k, Values: v})
	}
	if err := stream.Send(&workerv1.ProxyResponsePart{Part: &workerv1.ProxyResponsePart_Head{Head: out}}); err != nil {
		return err
	}
	buf := make([]byte, ChunkBytes)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if serr := stream.Send(&workerv1.ProxyResponsePart{Part: &workerv1.ProxyResponsePart_Body{Body: buf[:n]}}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Unavailable, "hostproxy: read upstream response: %v", err)
		}
	}
}

// partReader reads the request body from the worker's body parts until it
// half-closes.
type partReader struct {
	stream  workerv1.HostProxy_RoundTripServer
	pending []byte
}

func (r *partReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		part, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the half-close
		}
		r.pending = part.GetBody()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
