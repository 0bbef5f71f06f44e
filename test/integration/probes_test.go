//go:build linux

package integration

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
)

// probeAnswer is one answer of the HTTP probe endpoint.
type probeAnswer struct {
	code int
	body string
}

// askProbe asks GET base+path on the probe endpoint.
func askProbe(t *testing.T, client *http.Client, base, path string) probeAnswer {
	t.Helper()
	resp, err := client.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return probeAnswer{resp.StatusCode, strings.TrimSpace(string(b))}
}

// servedProbes serves in's HTTP probes on a loopback port and returns
// their base URL and a client; both end with the test.
func servedProbes(t *testing.T, in *instance) (string, *http.Client) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.srv.ServeProbes(lis))
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	return "http://" + lis.Addr().String(), client
}

// waitReady waits for in's readiness on its grpc.health.v1 (Watch sends
// the state now and at every change: no polling).
func waitReady(t *testing.T, in *instance) {
	t.Helper()
	watch, err := healthpb.NewHealthClient(in.conn).Watch(callCtx(t), &healthpb.HealthCheckRequest{Service: supervisor.HealthReadiness})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("readiness watch: %v", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

// TestProbesFollowTheForkServer: on the HTTP probe endpoint (what the
// kubelet asks), a supervisor is ready once its fork server has started
// (its fork server alive and its cgroup parent writable), is live all
// along, and at shutdown stops being ready while staying live, so that a
// draining pod is not restarted.
func TestProbesFollowTheForkServer(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("probes", sharedSlots, 2, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = in.stop()
		}
	})
	base, client := servedProbes(t, in)
	waitReady(t, in)
	for path, want := range map[string]probeAnswer{
		"/readyz":   {200, `{"ready":true}`},
		"/healthz":  {200, `{"live":true}`},
		"/startupz": {200, `{"started":true}`},
	} {
		if got := askProbe(t, client, base, path); got != want {
			t.Errorf("ready: GET %s = %v, want %v", path, got, want)
		}
	}
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for path, want := range map[string]probeAnswer{
		"/readyz":  {503, `{"ready":false,"reason":"shutting down"}`},
		"/healthz": {200, `{"live":true}`},
	} {
		if got := askProbe(t, client, base, path); got != want {
			t.Errorf("after shutdown: GET %s = %v, want %v", path, got, want)
		}
	}
}

// fakeKubeAPI is a stand-in for the Kubernetes API server that answers
// GET /version, and can go away and come back on the same address.
type fakeKubeAPI struct {
	addr string
	srv  *http.Server
	done chan struct{}
}

func (f *fakeKubeAPI) start(t *testing.T) {
	t.Helper()
	lis, err := net.Listen("tcp", f.addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", f.addr, err)
	}
	f.addr = lis.Addr().String()
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.0"})
	}), ReadHeaderTimeout: 5 * time.Second}
	f.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fake API server: %v", err)
		}
	}(f.srv, f.done)
}

// stop makes the API server unreachable: its port refuses connections.
func (f *fakeKubeAPI) stop() {
	if f.srv != nil {
		_ = f.srv.Close()
		<-f.done
		f.srv = nil
	}
}

// TestReadyzFollowsKubernetesAPI: with Kubernetes access configured for
// sandboxed code, /readyz says 503 with a generic reason while the API
// server is unreachable (its address, the error, stay in the log), and
// 200 once it is back; /healthz and /startupz say 200 throughout, since
// liveness (and a startup probe, which restarts a container too) depend on
// nothing outside the process.
func TestReadyzFollowsKubernetesAPI(t *testing.T) {
	requireSandbox(t)
	api := &fakeKubeAPI{addr: "127.0.0.1:0"}
	api.start(t)
	t.Cleanup(api.stop)
	// serve's way: a kubeconfig naming the API server, through HostAccess.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://`+api.addr+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: u}}]
current-context: fake
`), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := startInstance("readyz-kube", sharedSlots, 2, 1, 5*time.Second, func(cfg *supervisor.Config) {
		if err := supervisor.HostAccess(cfg, kubeconfig, hostproxy.KubePolicy{Namespaces: []string{"default"}}, ""); err != nil || cfg.Kube == nil {
			t.Fatalf("HostAccess: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.stop() })
	base, client := servedProbes(t, in)
	waitReady(t, in)
	ready := probeAnswer{200, `{"ready":true}`}
	live := probeAnswer{200, `{"live":true}`}
	started := probeAnswer{200, `{"started":true}`}
	if got := askProbe(t, client, base, "/readyz"); got != ready {
		t.Fatalf("API server up: /readyz = %v, want %v", got, ready)
	}

	// until polls /readyz (a run of the checks is reused for up to a
	// second, so a change shows within that) until it answers want
	// rather than from, checking /healthz at every round.
	until := func(when string, from, want probeAnswer) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if got := askProbe(t, client, base, "/healthz"); got != live {
				t.Fatalf("%s: /healthz = %v, want %v", when, got, live)
			}
			if got := askProbe(t, client, base, "/startupz"); got != started {
				t.Fatalf("%s: /startupz = %v, want %v", when, got, started)
			}
			got := askProbe(t, client, base, "/readyz")
			switch {
			case got == want:
				return
			case got != from:
				t.Fatalf("%s: /readyz = %v, want %v", when, got, want)
			case time.Now().After(deadline):
				t.Fatalf("%s: /readyz still %v after 30 s, want %v", when, got, want)
			}
			<-tick.C
		}
	}
	unavailable := probeAnswer{503, `{"ready":false,"reason":"kubernetes API unavailable"}`}
	api.stop()
	until("API server unreachable", ready, unavailable)
	api.start(t)
	until("API server back", unavailable, ready)
}
