package hostproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Bounds of proxied requests. Bodies are streamed, never held whole: the
// supervisor holds at most one ChunkBytes chunk of a body and grpc-go's
// 64 KiB write quota per request, so the memory of the proxy is bounded by
// MaxRequests of them (a few MiB) whatever the sandboxes ask.
const (
	// MaxRequestBytes bounds a request body; a larger one is answered 413.
	MaxRequestBytes = 4 << 20
	// ChunkBytes is the largest body chunk carried in one message.
	ChunkBytes = 32 << 10
	// MaxRequestsPerSandbox bounds one sandbox's requests in flight (its
	// broker server's HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS): more wait
	// in the sandbox's worker, costing the supervisor nothing.
	MaxRequestsPerSandbox = 8
	// MaxRequests bounds the requests in flight of all sandboxes together;
	// more wait (for as long as their caller does) in the supervisor,
	// holding no body.
	MaxRequests = 64
	// MaxWatchSeconds caps a watch's timeoutSeconds, so that a watch
	// answers within the execution's lifetime.
	MaxWatchSeconds = 30
)

// ErrNotConfigured is returned by a Target that has no upstream.
var ErrNotConfigured = errors.New("hostproxy: upstream not configured")

// Request is one HTTP request from a sandbox.
type Request struct {
	Method string
	// Path is the request's path with its raw query, e.g.
	// "/api/v1/namespaces/default/pods?limit=10".
	Path   string
	Header http.Header
	// Body is read as the request is forwarded, at most MaxRequestBytes of
	// it; nil = no body.
	Body io.Reader
	// ContentLength is Body's length in bytes, -1 if unknown.
	ContentLength int64
}

// Response is the answer given back to the sandbox. The caller reads and
// closes Body.
type Response struct {
	Status int
	Header http.Header
	Body   io.ReadCloser
}

// Target is an upstream the sandbox may reach through the proxy.
type Target interface {
	RoundTrip(ctx context.Context, req Request) (Response, error)
}

// Counter counts proxied requests by verb and outcome ("allowed",
// "denied", "error"). Safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	n  map[[2]string]int64
}

// Add counts one request.
func (c *Counter) Add(verb, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[[2]string]int64{}
	}
	c.n[[2]string{verb, outcome}]++
}

// Get returns the count for verb and outcome.
func (c *Counter) Get(verb, outcome string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[[2]string{verb, outcome}]
}

// Each calls fn for every (verb, outcome) counted so far, with its count,
// in no particular order.
func (c *Counter) Each(fn func(verb, outcome string, n int64)) {
	c.mu.Lock()
	snap := make(map[[2]string]int64, len(c.n))
	for k, n := range c.n {
		snap[k] = n
	}
	c.mu.Unlock()
	for k, n := range snap {
		fn(k[0], k[1], n)
	}
}

// forward sends req to base+req.Path with rt and returns the response
// with its body unread (streamed by the caller). A body over
// MaxRequestBytes is answered 413.
func forward(ctx context.Context, rt http.RoundTripper, base *url.URL, req Request) (Response, error) {
	if req.ContentLength > MaxRequestBytes {
		return errorResponse(http.StatusRequestEntityTooLarge, "request body too large"), nil
	}
	rel, err := url.Parse(req.Path)
	if err != nil || rel.IsAbs() || rel.Host != "" || !strings.HasPrefix(rel.Path, "/") {
		return errorResponse(http.StatusBadRequest, "bad request path"), nil
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + rel.Path
	u.RawPath = ""
	u.RawQuery = rel.RawQuery
	var body *limitedBody
	var rbody io.Reader
	if req.Body != nil && req.ContentLength != 0 {
		body = &limitedBody{r: req.Body}
		rbody = body
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u.String(), rbody)
	if err != nil {
		return errorResponse(http.StatusBadRequest, err.Error()), nil
	}
	if rbody != nil {
		hreq.ContentLength = req.ContentLength
	}
	for _, k := range []string{"Accept", "Content-Type", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			hreq.Header.Set(k, v)
		}
	}
	resp, err := rt.RoundTrip(hreq)
	if body != nil && body.tooLarge {
		if err == nil {
			resp.Body.Close()
		}
		return errorResponse(http.StatusRequestEntityTooLarge, "request body too large"), nil
	}
	if err != nil {
		return Response{}, fmt.Errorf("hostproxy: forward %s %s: %w", req.Method, rel.Path, err)
	}
	h := http.Header{}
	for _, k := range []string{"Content-Type", "Content-Encoding"} {
		if v := resp.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	return Response{Status: resp.StatusCode, Header: h, Body: resp.Body}, nil
}

// errBodyTooLarge ends a request body past MaxRequestBytes.
var errBodyTooLarge = errors.New("hostproxy: request body too large")

// limitedBody reads at most MaxRequestBytes of r.
type limitedBody struct {
	r        io.Reader
	n        int64
	tooLarge bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > MaxRequestBytes {
		b.tooLarge = true
		return 0, errBodyTooLarge
	}
	return n, err
}

func errorResponse(status int, msg string) Response {
	return Response{Status: status, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: io.NopCloser(strings.NewReader(msg + "\n"))}
}
