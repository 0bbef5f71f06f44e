//go:build linux

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
)

// hostAccessSlot is the uid window slot of the host-access supervisor.
const hostAccessSlot = 32

// fakeHosts is a fake Kubernetes API server, which answers any
// authorised request with a list of two pods and records what it was
// asked, and a fake Prometheus, with a kubeconfig that names the API
// server; both end with the test.
type fakeHosts struct {
	kubeconfig string
	promURL    string
	mu         sync.Mutex
	seen       []string // "METHOD /path" of every request the API server got
}

// fakeHostToken is the bearer token of fakeHosts' kubeconfig.
const fakeHostToken = "tok-9f8e7d6c5b4a-secret"

func newFakeHosts(t *testing.T) *fakeHosts {
	t.Helper()
	f := &fakeHosts{}
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+fakeHostToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"web-1","namespace":"default"}},{"metadata":{"name":"web-2","namespace":"default"}}]}`)
	}))
	t.Cleanup(api.Close)
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"api"},"value":[%d,"1"]}]}}`, time.Now().Unix())
	}))
	t.Cleanup(prom.Close)
	f.promURL = prom.URL
	f.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(f.kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
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
`, api.URL, fakeHostToken)), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// configure gives the supervisor access to both fakes, with the default
// policy.
func (f *fakeHosts) configure(t *testing.T) func(*supervisor.Config) {
	return func(cfg *supervisor.Config) {
		if err := supervisor.HostAccess(cfg, f.kubeconfig, hostproxy.KubePolicy{}, f.promURL); err != nil {
			t.Errorf("HostAccess: %v", err)
		}
	}
}

// requests returns what the API server was asked.
func (f *fakeHosts) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// TestKubernetesAndPrometheusWithoutCredentials: a node script lists pods
// from a fake API server through kc, a delete is refused by the policy (the
// script sees 403 and the API server never sees it), prometheus-query gets
// a result from a fake Prometheus, and the bearer token appears nowhere
// the script can look.
func TestKubernetesAndPrometheusWithoutCredentials(t *testing.T) {
	requireSandbox(t)
	const token = fakeHostToken
	hosts := newFakeHosts(t)
	in, err := startInstance("hostaccess", hostAccessSlot, 2, 2, 5*time.Second, hosts.configure(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	requireNode(t, in)
	health, err := in.client.HealthCheck(callCtx(t), &sandboxv1.HealthCheckRequest{})
	if err != nil || health.GetKubernetesContext() != "fake-ctx" {
		t.Fatalf("HealthCheck kubernetes_context = %q, %v", health.GetKubernetesContext(), err)
	}
	code := `
const api = kc.makeApiClient(k8s.CoreV1Api);
const pods = await api.listNamespacedPod({ namespace: "default" });
console.log("pods:", pods.items.map((p: any) => p.metadata.name).join(","));
try {
  await api.deleteNamespacedPod({ name: "web-1", namespace: "default" });
  console.log("delete: allowed");
} catch (e: any) {
  console.log("delete status:", e.code ?? e.statusCode ?? e.response?.statusCode ?? String(e.message).slice(0, 80));
}
const { PrometheusDriver } = require("prometheus-query");
const driver = new PrometheusDriver({ endpoint: PROMETHEUS_URL });
const q = await driver.instantQuery("up");
console.log("prometheus:", q.result.length, q.result[0].metric.labels.job);
`
	resp := execute(t, in.client, nodeReq(code))
	if !resp.GetSuccess() {
		t.Fatalf("%s", describe(resp))
	}
	out := resp.GetOutput()
	for _, want := range []string{"pods: web-1,web-2", "delete status: 403", "prometheus: 1 api"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, s := range hosts.requests() {
		if strings.HasPrefix(s, "DELETE") {
			t.Errorf("the API server received %s: the policy must refuse deletes", s)
		}
	}

	// The token is nowhere the script can look.
	look := `
cat /proc/self/environ | tr '\0' '\n'; env
for f in /etc/* /workspace/* /tmp/*; do [ -f "$f" ] && cat "$f"; done 2>/dev/null
cat /proc/1/environ 2>/dev/null; cat /proc/1/cmdline 2>/dev/null
echo scanned`
	scan := execute(t, in.client, shellReq(look, 0))
	if !strings.Contains(scan.GetOutput(), "scanned") {
		t.Fatalf("scan did not run: %s", describe(scan))
	}
	if strings.Contains(scan.GetOutput()+scan.GetErrorOutput(), token) || strings.Contains(out, token) {
		t.Fatal("the bearer token is visible inside the sandbox")
	}
}

// TestSessionExecsReachKubernetes: every exec of a session sandbox,
// one after another and two at once, reaches the API server through the
// sandbox's one proxy (served to the first exec, kept for the sandbox's
// life), and a delete is refused by the policy as in a single-use run.
func TestSessionExecsReachKubernetes(t *testing.T) {
	requirePython(t)
	hosts := newFakeHosts(t)
	si := startSessionInstance(t, "sess-hostacc", 2, hosts.configure(t))
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Runtime: sandboxv1.Runtime_RUNTIME_PYTHON})
	const get = `import json, urllib.request
r = urllib.request.urlopen("` + supervisor.SandboxKubeURL + `/api/v1/namespaces/default/pods", timeout=20)
print("pods:", ",".join(i["metadata"]["name"] for i in json.load(r)["items"]))
`
	for i := range 2 {
		if r := si.mustExec(t, "alice", id, get); !strings.Contains(r.stdout, "pods: web-1,web-2") {
			t.Fatalf("exec %d printed %q, stderr %q", i, r.stdout, r.stderr)
		}
	}
	var wg sync.WaitGroup
	outs := make([]execResult, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Go(func() { outs[i], errs[i] = si.exec(t, "alice", id, get) })
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || !strings.Contains(outs[i].stdout, "pods: web-1,web-2") {
			t.Errorf("concurrent exec %d: %v, stdout %q stderr %q", i, errs[i], outs[i].stdout, outs[i].stderr)
		}
	}
	del := si.mustExec(t, "alice", id, `import urllib.request, urllib.error
try:
    urllib.request.urlopen(urllib.request.Request("`+supervisor.SandboxKubeURL+`/api/v1/namespaces/default/pods/web-1", method="DELETE"), timeout=20)
    print("delete: allowed")
except urllib.error.HTTPError as e:
    print("delete status:", e.code)
`)
	if !strings.Contains(del.stdout, "delete status: 403") {
		t.Errorf("delete printed %q", del.stdout)
	}
	gets := 0
	for _, s := range hosts.requests() {
		switch {
		case strings.HasPrefix(s, "DELETE"):
			t.Errorf("the API server received %s: the policy must refuse deletes", s)
		case s == "GET /api/v1/namespaces/default/pods":
			gets++
		}
	}
	if gets != 4 {
		t.Errorf("the API server got %d lists, want 4: %v", gets, hosts.requests())
	}
}
