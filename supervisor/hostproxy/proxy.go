package hostproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Bounds on what one proxied request may carry.
const (
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes = 4 << 20
	// MaxResponseBytes bounds a response body; a larger one is answered
	// 502 with a message saying so.
	MaxResponseBytes = 32 << 20
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
	Body   []byte
}

// Response is the answer given back to the sandbox.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
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

// forward sends req to base+req.Path with rt and reads a bounded response.
func forward(ctx context.Context, rt http.RoundTripper, base *url.URL, req Request) (Response, error) {
	if len(req.Body) > MaxRequestBytes {
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
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return errorResponse(http.StatusBadRequest, err.Error()), nil
	}
	for _, k := range []string{"Accept", "Content-Type", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			hreq.Header.Set(k, v)
		}
	}
	resp, err := rt.RoundTrip(hreq)
	if err != nil {
		return Response{}, fmt.Errorf("hostproxy: forward %s %s: %w", req.Method, rel.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return Response{}, fmt.Errorf("hostproxy: read response: %w", err)
	}
	if len(body) > MaxResponseBytes {
		return errorResponse(http.StatusBadGateway, fmt.Sprintf("response larger than %d bytes", MaxResponseBytes)), nil
	}
	h := http.Header{}
	for _, k := range []string{"Content-Type", "Content-Encoding"} {
		if v := resp.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	return Response{Status: resp.StatusCode, Header: h, Body: body}, nil
}

func errorResponse(status int, msg string) Response {
	return Response{Status: status, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: []byte(msg + "\n")}
}
