//go:build linux

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
)

// hostAccessSlot is the uid window slot of the host-access supervisor.
const hostAccessSlot = 32

// TestKubernetesAndPrometheusWithoutCredentials: a node script lists pods
// from a fake API server through kc, a delete is refused by the policy (the
// script sees 403 and the API server never sees it), prometheus-query gets
// a result from a fake Prometheus, and the bearer token appears nowhere
// the script can look.
func TestKubernetesAndPrometheusWithoutCredentials(t *testing.T) {
	requireSandbox(t)
	const token = "tok-9f8e7d6c5b4a-secret"
	var mu sync.Mutex
	var seen []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"web-1","namespace":"default"}},{"metadata":{"name":"web-2","namespace":"default"}}]}`)
	}))
	defer api.Close()
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"api"},"value":[%d,"1"]}]}}`, time.Now().Unix())
	}))
	defer prom.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
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
`, api.URL, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := startInstance("hostaccess", hostAccessSlot, 2, 2, 5*time.Second, func(cfg *supervisor.Config) {
		if err := supervisor.HostAccess(cfg, kubeconfig, hostproxy.KubePolicy{}, prom.URL); err != nil {
			t.Errorf("HostAccess: %v", err)
		}
	})
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
	mu.Lock()
	for _, s := range seen {
		if strings.HasPrefix(s, "DELETE") {
			t.Errorf("the API server received %s: the policy must refuse deletes", s)
		}
	}
	mu.Unlock()

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
