package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// syncBuffer is a log sink the server's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// probeGet asks url and returns the status and the decoded JSON body.
func probeGet(t *testing.T, method, url string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, url, ct)
		}
		if method == http.MethodGet {
			if err := json.Unmarshal(b, &body); err != nil {
				t.Errorf("%s %s: body %q: %v", method, url, b, err)
			}
		}
	}
	return resp.StatusCode, body
}

// TestHTTPProbes: over the probe endpoint (plain HTTP) a supervisor whose
// fork server cannot start is live (/healthz 200) but not ready (/readyz
// 503 "starting") and not started (/startupz 503); once started,
// /startupz says so whatever the checks say, and /readyz gives the first failing check's
// generic reason while the details go to the log only, and 200 when the
// checks pass, and grpc.health.v1's readiness follows; after Shutdown it
// is still live and never ready again; other methods and paths are
// refused; nothing is left running.
func TestHTTPProbes(t *testing.T) {
	logs := &syncBuffer{}
	s, err := New(Config{Sandbox: validSandboxConfig(t), // its worker binary is no program
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := s.ServeProbes(lis)
	base := "http://" + lis.Addr().String()
	wantProbe := func(when, path string, code int, body string) {
		t.Helper()
		got, b := probeGet(t, http.MethodGet, base+path)
		j, _ := json.Marshal(b)
		if got != code || string(j) != body {
			t.Errorf("%s: GET %s = %d %s, want %d %s", when, path, got, j, code, body)
		}
	}
	readiness := func() healthpb.HealthCheckResponse_ServingStatus {
		r, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: HealthReadiness})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}

	wantProbe("fork server failing", "/healthz", 200, `{"live":true}`)
	wantProbe("fork server failing", "/readyz", 503, `{"ready":false,"reason":"starting"}`)
	wantProbe("fork server failing", "/startupz", 503, `{"reason":"starting","started":false}`)
	if code, _ := probeGet(t, http.MethodHead, base+"/readyz"); code != 503 {
		t.Errorf("HEAD /readyz = %d", code)
	}
	if code, _ := probeGet(t, http.MethodPost, base+"/healthz"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", code)
	}
	if code, _ := probeGet(t, http.MethodGet, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the probe endpoint = %d, want 404", code)
	}

	// Started, with checks of the test's own: the first failing one's
	// reason is served, its details logged.
	var failing atomic.Value
	failing.Store("")
	s.probes.mu.Lock()
	s.probes.started = true
	s.probes.mu.Unlock()
	s.probes.checkMu.Lock()
	s.probes.checks = []readyCheck{
		{ReasonForkServer, func(context.Context) error { return nil }},
		{ReasonKubernetes, func(context.Context) error {
			if f := failing.Load().(string); f != "" {
				return errors.New(f)
			}
			return nil
		}},
	}
	s.probes.checkMu.Unlock()
	const detail = "dial tcp 10.96.0.1:443: connect: connection refused"
	failing.Store(detail)
	wantProbe("the API server down", "/readyz", 503, `{"ready":false,"reason":"kubernetes API unavailable"}`)
	if readiness() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Error("grpc.health.v1 readiness is SERVING while /readyz fails")
	}
	if !strings.Contains(logs.String(), detail) {
		t.Errorf("the details are not in the log:\n%s", logs)
	}
	wantProbe("the API server down", "/healthz", 200, `{"live":true}`)
	wantProbe("the API server down", "/startupz", 200, `{"started":true}`)
	failing.Store("")
	s.probes.checkMu.Lock()
	s.probes.checkedAt = time.Time{} // the next call runs the checks
	s.probes.checkMu.Unlock()
	wantProbe("the API server back", "/readyz", 200, `{"ready":true}`)
	if readiness() != healthpb.HealthCheckResponse_SERVING {
		t.Error("grpc.health.v1 readiness is not SERVING while /readyz succeeds")
	}
	if !strings.Contains(logs.String(), "ready again") {
		t.Errorf("the return to ready is not logged:\n%s", logs)
	}

	_ = s.Shutdown(0)
	s.setReadiness(healthpb.HealthCheckResponse_SERVING) // a late fork-server start
	wantProbe("after Shutdown", "/readyz", 503, `{"ready":false,"reason":"shutting down"}`)
	wantProbe("after Shutdown", "/healthz", 200, `{"live":true}`)
	if readiness() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Error("grpc.health.v1 readiness is SERVING after Shutdown")
	}
	http.DefaultClient.CloseIdleConnections()
	stop()
	goleak.VerifyNone(t, processGoroutines()...)
}

// TestReadinessChecksBounded: however many probes arrive at once, one run
// of the checks is in flight at a time, and within readyCheckEvery of the
// last run no new one starts (the callers get its result); past it, the
// next probe runs them again.
func TestReadinessChecksBounded(t *testing.T) {
	s, err := New(Config{Sandbox: validSandboxConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(0) }()
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	s.probes.mu.Lock()
	s.probes.started = true
	s.probes.mu.Unlock()
	s.probes.checkMu.Lock()
	if s.probes.every != readyCheckEvery {
		t.Errorf("checks run at most every %v, want %v", s.probes.every, readyCheckEvery)
	}
	s.probes.every = time.Hour // no run goes stale during the test
	s.probes.checks = []readyCheck{{ReasonKubernetes, func(context.Context) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		return errors.New("down")
	}}}
	s.probes.checkMu.Unlock()
	runs := func() int {
		s.probes.checkMu.Lock()
		defer s.probes.checkMu.Unlock()
		return s.probes.runs
	}

	const callers = 16
	reasons := make(chan string, callers)
	for range callers {
		go func() { reasons <- s.Readiness() }()
	}
	close(release)
	for range callers {
		if r := <-reasons; r != ReasonKubernetes {
			t.Errorf("reason %q", r)
		}
	}
	if runs() != 1 || most.Load() != 1 {
		t.Errorf("%d probes at once: %d runs, %d at a time; want 1 run", callers, runs(), most.Load())
	}
	s.probes.checkMu.Lock()
	s.probes.every = 0 // every run is stale at once
	s.probes.checkMu.Unlock()
	s.Readiness()
	s.Readiness()
	if runs() != 3 {
		t.Errorf("%d runs after two more probes past the interval, want 3", runs())
	}
}

// processGoroutines are goleak options ignoring the goroutines that live
// as long as the process once a sandbox or the fork server was started.
func processGoroutines() []goleak.Option {
	var ignore []goleak.Option
	for _, f := range sandbox.ProcessGoroutines {
		ignore = append(ignore, goleak.IgnoreTopFunction(f))
	}
	return ignore
}

// TestProbeEndpointBounded: the probe endpoint, which takes no
// credentials, holds probeMaxConnections connections at once; one more
// is served only when one of them closes.
func TestProbeEndpointBounded(t *testing.T) {
	s, err := New(Config{Sandbox: validSandboxConfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(0) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := s.ServeProbes(lis)
	defer stop()
	const request = "GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n"
	dial := func() net.Conn {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// answered reads one answer on c and reports whether it is 200.
	answered := func(c net.Conn) bool {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// An answered connection is closed, not kept alive for another.
	c := dial()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request); err != nil || !answered(c) {
		t.Fatalf("probe not answered (%v)", err)
	}
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after its answer the connection was not closed: read %d bytes, %v", n, err)
	}
	// A client holds every connection, each with half a request.
	start := time.Now()
	for range probeMaxConnections {
		if _, err := io.WriteString(dial(), "GET /healthz HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	extra := dial() // the kernel's backlog takes it
	if _, err := io.WriteString(extra, request); err != nil {
		t.Fatal(err)
	}
	// While the others are held it is not served; the read timeout
	// closes them, and then it is. The deadlines only bound the test.
	_ = extra.SetReadDeadline(time.Now().Add(probeReadTimeout / 4))
	if n, err := extra.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %d was read from (%d bytes, %v) while %d were held", probeMaxConnections+1, n, err, probeMaxConnections)
	}
	_ = extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	if !answered(extra) {
		t.Fatalf("connection %d not answered once the held ones timed out", probeMaxConnections+1)
	}
	if took := time.Since(start); took > 3*probeReadTimeout {
		t.Errorf("a probe behind %d held connections answered after %v; want about %v", probeMaxConnections, took, probeReadTimeout)
	}
}
