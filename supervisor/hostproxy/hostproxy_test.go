package hostproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseKubeRequest(t *testing.T) {
	tests := []struct {
		method, path string
		want         KubeRequest
		wantErr      bool
	}{
		{"GET", "/api/v1/namespaces/default/pods", KubeRequest{Verb: "list", Namespace: "default", Resource: "pods"}, false},
		{"GET", "/api/v1/namespaces/default/pods/web-1", KubeRequest{Verb: "get", Namespace: "default", Resource: "pods", Name: "web-1"}, false},
		{"GET", "/api/v1/namespaces/default/pods/web-1/log", KubeRequest{Verb: "get", Namespace: "default", Resource: "pods", Name: "web-1", Subresource: "log"}, false},
		{"GET", "/api/v1/pods?watch=true", KubeRequest{Verb: "watch", Resource: "pods"}, false},
		{"GET", "/api/v1/nodes", KubeRequest{Verb: "list", Resource: "nodes"}, false},
		{"GET", "/api/v1/namespaces/kube-system", KubeRequest{Verb: "get", Namespace: "kube-system", Resource: "namespaces", Name: "kube-system"}, false},
		{"GET", "/apis/apps/v1/namespaces/x/deployments", KubeRequest{Verb: "list", Namespace: "x", Resource: "deployments"}, false},
		{"DELETE", "/api/v1/namespaces/default/pods/web-1", KubeRequest{Verb: "delete", Namespace: "default", Resource: "pods", Name: "web-1"}, false},
		{"DELETE", "/api/v1/namespaces/default/pods", KubeRequest{Verb: "deletecollection", Namespace: "default", Resource: "pods"}, false},
		{"POST", "/api/v1/namespaces/default/pods", KubeRequest{Verb: "create", Namespace: "default", Resource: "pods"}, false},
		{"PATCH", "/api/v1/namespaces/default/pods/a", KubeRequest{Verb: "patch", Namespace: "default", Resource: "pods", Name: "a"}, false},
		{"PUT", "/api/v1/namespaces/default/pods/a", KubeRequest{Verb: "update", Namespace: "default", Resource: "pods", Name: "a"}, false},
		{"GET", "/version", KubeRequest{Verb: "get"}, false},
		{"GET", "/apis", KubeRequest{Verb: "get"}, false},
		{"GET", "/apis/apps/v1", KubeRequest{Verb: "get"}, false},
		// The legacy watch paths are watches, as the API server has them.
		{"GET", "/api/v1/watch/namespaces/default/pods", KubeRequest{Verb: "watch", Namespace: "default", Resource: "pods"}, false},
		{"GET", "/api/v1/watch/pods", KubeRequest{Verb: "watch", Resource: "pods"}, false},
		// Fail closed: anything not in canonical form, not classified as
		// a resource, or out of reach.
		{"GET", "/api/v1//namespaces/kube-system/secrets", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces//secrets", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/default/pods/", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/./secrets", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/../secrets", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/default%2Fx/pods", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/default/pods/a/log/extra", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/default/pods/a/proxy", KubeRequest{}, true},
		{"GET", "/api/v1/namespaces/default/pods/a/exec", KubeRequest{}, true},
		{"GET", "/api/v1/proxy/namespaces/default/pods/a", KubeRequest{}, true},
		{"GET", "/healthz", KubeRequest{}, true},
		{"GET", "/logs/kube-apiserver.log", KubeRequest{}, true},
		{"POST", "/version", KubeRequest{}, true},
		{"TRACE", "/api/v1/pods", KubeRequest{}, true},
		{"GET", "http://evil/api/v1/pods", KubeRequest{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got, err := ParseKubeRequest(tt.method, tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			got.Path = ""
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseKubeRequest: whatever is admitted is forwarded in canonical
// form, and the API server classifies the forwarded request exactly as the
// policy saw it (no parser differential); read-only verbs only for GET and
// HEAD.
func FuzzParseKubeRequest(f *testing.F) {
	for _, s := range []string{"/api/v1/pods", "/apis/apps/v1/namespaces/a/deployments/b/scale", "/version", "/api", "%zz",
		"/api/v1/namespaces/a", "/api/v1//namespaces/kube-system/secrets", "/api/v1/watch/namespaces/default/pods",
		"/api/v1/pods?watch=1&fieldSelector=metadata.name%3Dx", "/api/v1/namespaces/a/namespaces/b"} {
		f.Add("GET", s)
		f.Add("DELETE", s)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		ri, err := ParseKubeRequest(method, path)
		if err != nil {
			return
		}
		if ri.Verb == "" {
			t.Fatalf("accepted %s %q with no verb", method, path)
		}
		if method != "GET" && method != "HEAD" && (ri.Verb == "get" || ri.Verb == "list" || ri.Verb == "watch") {
			t.Fatalf("%s %q classified read-only as %q", method, path, ri.Verb)
		}
		u, err := url.ParseRequestURI(ri.Path)
		if err != nil || !canonicalPath(u.Path) {
			t.Fatalf("%s %q forwarded as non-canonical %q", method, path, ri.Path)
		}
		again, err := ParseKubeRequest(method, ri.Path)
		if err != nil || again != ri {
			t.Fatalf("%s %q: forwarded %q classifies as %+v, %v; policy saw %+v", method, path, ri.Path, again, err, ri)
		}
		if ri.Resource == "" && (ri.Namespace != "" || ri.Name != "") {
			t.Fatalf("%s %q: namespace or name without a resource: %+v", method, path, ri)
		}
	})
}

// TestKubePolicyFailsClosed: the requests by which a hand-written parser
// was bypassed never reach the API server, and what is forwarded is the
// classified path, not the raw one.
func TestKubePolicyFailsClosed(t *testing.T) {
	const token = "tok-fail-closed-123"
	srv, seen := fakeAPIServer(t, token)
	kubeconfig := writeKubeconfig(t, srv.URL, token)
	for _, c := range []struct {
		policy KubePolicy
		path   string
		want   int
	}{
		// Parsed as resource "" by a naive splitter, which skipped the
		// namespace check; an upstream that merges slashes then serves
		// kube-system's secrets.
		{KubePolicy{Namespaces: []string{"default"}}, "/api/v1//namespaces/kube-system/secrets", http.StatusBadRequest},
		{KubePolicy{Namespaces: []string{"default"}}, "/api/v1/namespaces/kube-system/secrets", http.StatusForbidden},
		// A watch (not allowed by --kube-verbs get,list), not a get of a
		// resource named "watch".
		{KubePolicy{Verbs: []string{"get", "list"}}, "/api/v1/watch/namespaces/default/pods", http.StatusForbidden},
		{KubePolicy{Verbs: []string{"get", "list"}}, "/api/v1/namespaces/default/pods?watch=1", http.StatusForbidden},
	} {
		k, err := LoadKube(kubeconfig, c.policy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.CloseIdleConnections)
		resp, err := k.RoundTrip(context.Background(), Request{Method: "GET", Path: c.path, Header: http.Header{}})
		if err == nil {
			readBody(t, resp)
		}
		if err != nil || resp.Status != c.want {
			t.Errorf("%s with %+v: status %d err %v, want %d", c.path, c.policy, resp.Status, err, c.want)
		}
	}
	if len(*seen) != 0 {
		t.Fatalf("the API server received %v; every request above must be refused", *seen)
	}
	k, err := LoadKube(kubeconfig, KubePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.CloseIdleConnections)
	resp, err := k.RoundTrip(context.Background(), Request{Method: "GET", Path: "/api/v1/namespaces/default/pods?limit=5&labelSelector=app%3Dweb", Header: http.Header{}})
	if err != nil || resp.Status != 200 {
		t.Fatalf("list: %d %v", resp.Status, err)
	}
	readBody(t, resp)
	if want := "GET /api/v1/namespaces/default/pods?labelSelector=app%3Dweb&limit=5"; len(*seen) != 1 || (*seen)[0] != want {
		t.Fatalf("upstream saw %v, want %q", *seen, want)
	}
}

// readBody reads and closes a response's body.
func readBody(t *testing.T, resp Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// fakeAPIServer answers like the Kubernetes API server and requires the
// bearer token. It speaks TLS: client-go attaches credentials only to TLS
// connections.
func fakeAPIServer(t *testing.T, token string) (*httptest.Server, *[]string) {
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"web-1"}},{"metadata":{"name":"web-2"}}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func writeKubeconfig(t *testing.T, server, token string) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
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
`, server, token)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKubeForwardsWithCredentialsAndPolicy(t *testing.T) {
	const token = "s3cr3t-token"
	srv, seen := fakeAPIServer(t, token)
	k, err := LoadKube(writeKubeconfig(t, srv.URL, token), KubePolicy{})
	if err != nil || k == nil {
		t.Fatalf("LoadKube: %v", err)
	}
	t.Cleanup(k.CloseIdleConnections)
	if k.Context() != "fake-ctx" {
		t.Errorf("context = %q", k.Context())
	}
	ctx := context.Background()
	resp, err := k.RoundTrip(ctx, Request{Method: "GET", Path: "/api/v1/namespaces/default/pods", Header: http.Header{}})
	if err != nil || resp.Status != 200 || !strings.Contains(readBody(t, resp), "web-2") {
		t.Fatalf("list pods: %v %d", err, resp.Status)
	}
	resp, err = k.RoundTrip(ctx, Request{Method: "DELETE", Path: "/api/v1/namespaces/default/pods/web-1", Header: http.Header{}})
	if err != nil || resp.Status != http.StatusForbidden {
		t.Fatalf("delete: %v %d", err, resp.Status)
	}
	var st map[string]any
	if body := readBody(t, resp); json.Unmarshal([]byte(body), &st) != nil || st["reason"] != "Forbidden" || st["kind"] != "Status" {
		t.Fatalf("denied body = %s", body)
	}
	if len(*seen) != 1 {
		t.Fatalf("upstream saw %v; the denied delete must not be forwarded", *seen)
	}
	if k.Counts.Get("list", "allowed") != 1 || k.Counts.Get("delete", "denied") != 1 {
		t.Fatalf("counts wrong: list/allowed=%d delete/denied=%d", k.Counts.Get("list", "allowed"), k.Counts.Get("delete", "denied"))
	}
}

func TestKubeNamespacePolicy(t *testing.T) {
	srv, _ := fakeAPIServer(t, "team-token")
	k, err := LoadKube(writeKubeconfig(t, srv.URL, "team-token"), KubePolicy{Namespaces: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.CloseIdleConnections)
	for path, want := range map[string]int{
		"/api/v1/namespaces/team-a/pods": 200,
		"/api/v1/namespaces/team-b/pods": 403,
		"/api/v1/pods":                   403, // all namespaces
		"/api/v1/nodes":                  403, // cluster-scoped
	} {
		resp, err := k.RoundTrip(context.Background(), Request{Method: "GET", Path: path, Header: http.Header{}})
		if err == nil {
			readBody(t, resp)
		}
		if err != nil || resp.Status != want {
			t.Errorf("%s: status %d err %v, want %d", path, resp.Status, err, want)
		}
	}
}

func TestCapWatch(t *testing.T) {
	for in, want := range map[string]string{
		"/api/v1/pods?watch=1":                     "timeoutSeconds=30",
		"/api/v1/pods?watch=1&timeoutSeconds=5":    "timeoutSeconds=5",
		"/api/v1/pods?watch=1&timeoutSeconds=9999": "timeoutSeconds=30",
	} {
		if got := capWatch(in); !strings.Contains(got, want) {
			t.Errorf("capWatch(%q) = %q, want %s", in, got, want)
		}
	}
}

func TestPrometheusReadOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	p, err := NewPrometheus(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseIdleConnections()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/api/v1/query?query=up", 200},
		{"POST", "/api/v1/query_range", 200},
		{"GET", "/api/v1/label/job/values", 200},
		{"POST", "/api/v1/admin/tsdb/delete_series", 403},
		{"GET", "/federate", 403},
		{"DELETE", "/api/v1/query", 403},
		{"GET", "/api/v1//query?query=up", 400},
		{"GET", "/api/v1/label/../admin/values", 400},
		{"GET", "/api/v1/label/a/b/values", 403},
	} {
		resp, err := p.RoundTrip(context.Background(), Request{Method: c.method, Path: c.path, Header: http.Header{}})
		if err == nil {
			readBody(t, resp)
		}
		if err != nil || resp.Status != c.want {
			t.Errorf("%s %s: %d %v, want %d", c.method, c.path, resp.Status, err, c.want)
		}
	}
	if p, err := NewPrometheus(""); p != nil || err != nil {
		t.Error("empty URL must be not configured")
	}
	if _, err := NewPrometheus("file:///etc/passwd"); err == nil {
		t.Error("non-http URL accepted")
	}
}

// TestKubeReachable: Reachable is nil when the API server answers
// /version with the supervisor's credentials, and an error when it
// refuses them or cannot be reached; none of it is counted as a
// sandbox's request.
func TestKubeReachable(t *testing.T) {
	srv, seen := fakeAPIServer(t, "probe-token")
	k, err := LoadKube(writeKubeconfig(t, srv.URL, "probe-token"), KubePolicy{Namespaces: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := k.Reachable(ctx); err != nil {
		t.Fatalf("reachable API server: %v", err)
	}
	if len(*seen) != 1 || (*seen)[0] != "GET /version" {
		t.Fatalf("upstream saw %v, want GET /version", *seen)
	}
	refused, err := LoadKube(writeKubeconfig(t, srv.URL, "wrong-token"), KubePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := refused.Reachable(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("credentials refused: %v, want the 401 named", err)
	}
	srv.Close()
	if err := k.Reachable(ctx); err == nil {
		t.Error("a closed API server was reachable")
	}
	n := 0
	k.Counts.Each(func(string, string, int64) { n++ })
	if n != 0 {
		t.Errorf("Reachable counted %d sandbox request kind(s)", n)
	}
}
