package hostproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Prometheus forwards the read-only query API to PROMETHEUS_URL.
type Prometheus struct {
	base *url.URL
	rt   http.RoundTripper
	// Counts counts requests by endpoint kind and outcome.
	Counts Counter
}

// readOnlyPaths are the Prometheus HTTP API endpoints a sandbox may use
// (https://prometheus.io/docs/prometheus/latest/querying/api/).
var readOnlyPaths = []string{
	"/api/v1/query", "/api/v1/query_range", "/api/v1/query_exemplars", "/api/v1/series",
	"/api/v1/labels", "/api/v1/label/", "/api/v1/metadata", "/api/v1/targets/metadata",
	"/api/v1/status/buildinfo",
}

// NewPrometheus returns a proxy to the Prometheus server at rawURL ("" =
// not configured: nil, nil).
func NewPrometheus(rawURL string) (*Prometheus, error) {
	if rawURL == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hostproxy: PROMETHEUS_URL %q is not an http(s) URL", rawURL)
	}
	// HTTP/1.1 only, as for the API server (NewKube).
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	return &Prometheus{base: u, rt: t}, nil
}

// CloseIdleConnections closes the idle connections to Prometheus (at
// shutdown; tests).
func (p *Prometheus) CloseIdleConnections() {
	if t, ok := p.rt.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}

// RoundTrip forwards GET and POST (form-encoded queries) on the read-only
// endpoints; anything else is 403.
func (p *Prometheus) RoundTrip(ctx context.Context, req Request) (Response, error) {
	u, err := url.ParseRequestURI(req.Path)
	var query url.Values
	if err == nil {
		query, err = url.ParseQuery(u.RawQuery)
	}
	if err != nil || u.IsAbs() || u.Host != "" || u.RawPath != "" || !canonicalPath(u.Path) {
		p.Counts.Add("unknown", "denied")
		return errorResponse(http.StatusBadRequest, "bad request path (not in canonical form)"), nil
	}
	allowed := req.Method == http.MethodGet || req.Method == http.MethodPost
	ok := false
	for _, ro := range readOnlyPaths {
		if u.Path == ro || (strings.HasSuffix(ro, "/") && strings.HasPrefix(u.Path, ro) && strings.HasSuffix(u.Path, "/values") && strings.Count(u.Path, "/") == 5) {
			ok = true
		}
	}
	if !allowed || !ok {
		p.Counts.Add("other", "denied")
		return errorResponse(http.StatusForbidden, fmt.Sprintf("execfarm policy: %s %s is not part of the read-only Prometheus API", req.Method, u.Path)), nil
	}
	// Forward the path as checked, never the raw one.
	req.Path = (&url.URL{Path: u.Path, RawQuery: query.Encode()}).RequestURI()
	resp, err := forward(ctx, p.rt, p.base, req)
	if err != nil {
		p.Counts.Add("query", "error")
		return Response{}, err
	}
	p.Counts.Add("query", "allowed")
	return resp, nil
}
