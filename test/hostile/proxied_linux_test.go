//go:build linux

package hostile

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// proxiedSlots of the suite's uid window belong to the proxied supervisor.
const proxiedSlots = 4

// The proxied supervisor's Kubernetes policy: read-only without watch, in
// namespace default only.
var proxiedPolicy = hostproxy.KubePolicy{Verbs: []string{"get", "list"}, Namespaces: []string{"default"}}

// bigListBytes is the size of the pod list the fake API server answers to
// labelSelector=big=..., after listDelay: a slow API server, so that the
// requests a sandbox has in flight at once show at the server (a small
// body keeps the case cheap on CPU: streaming large bodies is the load
// suite's and hostproxy's tests' business).
const (
	bigListBytes = 64 << 10
	listDelay    = 200 * time.Millisecond
)

// proxiedSupervisor is a second supervisor of the suite, with credential-
// free Kubernetes and Prometheus access to fakes on the host: the cases
// with `setup: host-proxy` run there.
type proxiedSupervisor struct {
	*served
	stateDir string
	api      *fakeAPI
	prom     *httptest.Server
}

// fakeAPI is a Kubernetes API server that records what reaches it.
type fakeAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	// seen lists every request, "METHOD REQUEST-URI".
	seen []string
	// inFlight and peak count concurrent requests by labelSelector.
	inFlight, peak map[string]int
}

const proxiedToken = "hostile-fake-api-token-0123456789"

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{inFlight: map[string]int{}, peak: map[string]int{}}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	return a
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("labelSelector")
	a.mu.Lock()
	a.seen = append(a.seen, r.Method+" "+r.URL.RequestURI())
	a.inFlight[key]++
	a.peak[key] = max(a.peak[key], a.inFlight[key])
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inFlight[key]--
		a.mu.Unlock()
	}()
	if r.Header.Get("Authorization") != "Bearer "+proxiedToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !strings.HasPrefix(key, "big=") {
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"web-1","namespace":"default"}}]}`)
		return
	}
	// A slow list: bigListBytes of JSON after listDelay, in 32 KiB pieces
	// as an API server streams a list.
	time.Sleep(listDelay)
	head := `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"big"},"pad":"`
	tail := `"}]}`
	if _, err := w.Write([]byte(head)); err != nil {
		return
	}
	pad := []byte(strings.Repeat("x", 32<<10))
	for left := bigListBytes - len(head) - len(tail); left > 0; left -= len(pad) {
		if _, err := w.Write(pad[:min(left, len(pad))]); err != nil {
			return
		}
	}
	_, _ = w.Write([]byte(tail))
}

// check returns what a host-proxy case must hold after it ran: nothing
// the policy refuses reached the API server, and the sandbox never had
// more than 8 requests in flight there.
func (p *proxiedSupervisor) check(marker string) func() []string {
	return func() []string {
		var bad []string
		p.api.mu.Lock()
		defer p.api.mu.Unlock()
		for _, s := range p.api.seen {
			if strings.Contains(s, "kube-system") || strings.Contains(s, "/watch") || strings.Contains(s, "watch=") {
				bad = append(bad, "the API server received "+s+": the policy (get, list in default) must refuse it")
			}
		}
		if n := p.api.peak["big="+marker]; n > hostproxy.MaxRequestsPerSandbox {
			bad = append(bad, fmt.Sprintf("the API server had %d requests of one sandbox in flight at once, more than %d", n, hostproxy.MaxRequestsPerSandbox))
		}
		return bad
	}
}

func (p *proxiedSupervisor) close() {
	if p.api != nil {
		p.api.srv.Close()
	}
	if p.prom != nil {
		p.prom.Close()
	}
}

// startProxied starts the fakes and the proxied supervisor.
func (s *suite) startProxied(log hclog.Logger, layers []*sandboxv1.IsolationLayer) error {
	p := &s.proxied
	p.api = newFakeAPI()
	p.prom = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	kubeconfig := filepath.Join(s.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: %q}
contexts:
- name: fake-ctx
  context: {cluster: fake, user: u}
current-context: fake-ctx
`, p.api.srv.URL, proxiedToken)), 0o600); err != nil {
		return err
	}
	p.stateDir = filepath.Join(s.dir, "state-proxied")
	ids := sandbox.NewIDPool(s.uidBase+(uidSlots-proxiedSlots)*rangeSize, rangeSize, proxiedSlots)
	// One execution at a time: the suite's timing-bound cases run beside it.
	sv, err := s.serve(log.Named("proxied"), layers, p.stateDir, ids, 1, func(cfg *supervisor.Config) error {
		return supervisor.HostAccess(cfg, kubeconfig, proxiedPolicy, p.prom.URL)
	})
	if err != nil {
		return fmt.Errorf("proxied supervisor: %w", err)
	}
	p.served = sv
	return nil
}
