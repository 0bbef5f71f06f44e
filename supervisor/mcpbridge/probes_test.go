package mcpbridge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// fakeHealth answers Check with status, or err; it counts the checks.
type fakeHealth struct {
	healthpb.HealthClient
	status  healthpb.HealthCheckResponse_ServingStatus
	err     error
	checks  int
	service string
}

func (f *fakeHealth) Check(_ context.Context, r *healthpb.HealthCheckRequest, _ ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
	f.checks++
	f.service = r.GetService()
	if f.err != nil {
		return nil, f.err
	}
	return &healthpb.HealthCheckResponse{Status: f.status}, nil
}

// TestHTTPProbes: `execfarm mcp --http` serves GET /healthz (liveness,
// asking nothing of the supervisor) and GET /readyz (the supervisor's
// readiness: 200 {"ready":true}, else 503 {"ready":false,"reason":R}
// with a generic R, never the error), both without a token where every
// other request needs one; readiness checks run at most once a second.
func TestHTTPProbes(t *testing.T) {
	const tok = "probe-test-token-0123456789abcdef"
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name     string
		health   *fakeHealth
		code     int
		readyz   string
		liveOnly bool
	}{
		{"ready", &fakeHealth{status: healthpb.HealthCheckResponse_SERVING}, 200, `{"ready":true}` + "\n", false},
		{"not ready", &fakeHealth{status: healthpb.HealthCheckResponse_NOT_SERVING}, 503, `{"ready":false,"reason":"supervisor not ready"}` + "\n", false},
		{"unavailable", &fakeHealth{err: errors.New("dial unix /run/secret/path.sock: connection refused")}, 503, `{"ready":false,"reason":"supervisor unavailable"}` + "\n", false},
	} {
		b, tokens := tokenBridge(t, tok)
		srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens, Health: c.health}))
		if code, body := get(srv.URL + "/healthz"); code != 200 || body != `{"live":true}`+"\n" {
			t.Errorf("%s: /healthz HTTP %d %q", c.name, code, body)
		}
		if c.health.checks != 0 {
			t.Errorf("%s: /healthz asked the supervisor", c.name)
		}
		for range 3 {
			if code, body := get(srv.URL + "/readyz"); code != c.code || body != c.readyz {
				t.Errorf("%s: /readyz HTTP %d %q, want %d %q", c.name, code, body, c.code, c.readyz)
			}
		}
		if c.health.checks != 1 || c.health.service != "readiness" {
			t.Errorf("%s: %d checks of %q for 3 probes within a second, want 1 of readiness", c.name, c.health.checks, c.health.service)
		}
		// Anything else still needs the token.
		if code, _ := get(srv.URL + "/"); code != http.StatusUnauthorized {
			t.Errorf("%s: GET / without a token: HTTP %d, want 401", c.name, code)
		}
		srv.Close()
		b.Close()
	}
}
