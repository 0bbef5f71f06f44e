package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/execfarm/execfarm/deploy"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
)

// shippedPolicy is the policy serve applies with the flags and the
// environment the rendered DaemonSet gives it, parsed by serve's own
// flag set.
func shippedPolicy(t *testing.T, r *deploy.Rendered) hostproxy.KubePolicy {
	t.Helper()
	c := r.Container("execfarm", "execfarm")
	if c == nil {
		t.Fatal("no execfarm container")
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args %v", args)
	}
	cmd := serveCmd()
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("serve %v: %v", args[1:], err)
	}
	verbs, _ := cmd.Flags().GetStringSlice("kube-verbs")
	namespaces, _ := cmd.Flags().GetStringSlice("kube-namespaces")
	env := map[string]string{}
	for _, e := range c["env"].([]any) {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			env[m["name"].(string)] = v
		}
	}
	p, err := kubePolicy(verbs, namespaces, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rbacGrants returns the rules the shipped RBAC objects grant the
// supervisor's service account in namespace ns ("" = cluster-wide, that
// is through ClusterRoleBindings only), as the API server's authorizer
// resolves them: Roles and ClusterRoles bound in ns, and ClusterRoles
// bound cluster-wide.
func rbacGrants(t *testing.T, r *deploy.Rendered, ns string) []rbacv1.PolicyRule {
	t.Helper()
	decode := func(o deploy.Object, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, into); err != nil {
			t.Fatal(err)
		}
	}
	roles := map[string][]rbacv1.PolicyRule{} // "Role/ns/name", "ClusterRole//name"
	for _, o := range r.Find("Role", "") {
		var x rbacv1.Role
		decode(o, &x)
		roles["Role/"+x.Namespace+"/"+x.Name] = x.Rules
	}
	for _, o := range r.Find("ClusterRole", "") {
		var x rbacv1.ClusterRole
		decode(o, &x)
		roles["ClusterRole//"+x.Name] = x.Rules
	}
	isSA := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" && s.Name == "execfarm" && s.Namespace == "execfarm" {
				return true
			}
		}
		return false
	}
	var rules []rbacv1.PolicyRule
	for _, o := range r.Find("ClusterRoleBinding", "") {
		var b rbacv1.ClusterRoleBinding
		decode(o, &b)
		if isSA(b.Subjects) && b.RoleRef.Kind == "ClusterRole" {
			rules = append(rules, roles["ClusterRole//"+b.RoleRef.Name]...)
		}
	}
	if ns == "" {
		return rules
	}
	for _, o := range r.Find("RoleBinding", "") {
		var b rbacv1.RoleBinding
		decode(o, &b)
		if b.Namespace != ns || !isSA(b.Subjects) {
			continue
		}
		if b.RoleRef.Kind == "Role" {
			rules = append(rules, roles["Role/"+ns+"/"+b.RoleRef.Name]...)
		} else {
			rules = append(rules, roles["ClusterRole//"+b.RoleRef.Name]...)
		}
	}
	return rules
}

func canRead(rules []rbacv1.PolicyRule, resource string) bool {
	ok, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{resource}}})
	return ok
}

// TestShippedKubeAccess: with the shipped manifests and the flags and
// environment the DaemonSet gives serve, sandboxed code reads exactly the
// namespaces listed. The policy serve applies refuses any other namespace,
// cluster-wide lists and cluster-scoped objects before they reach the API
// server, and the RBAC objects grant the service account nothing outside
// the list either; the two lists are the same. With the cluster-read
// component (an opt-in), both allow every namespace.
func TestShippedKubeAccess(t *testing.T) {
	const outside = "kube-system"
	for _, tc := range []struct {
		dir        string
		components []string
		clusterAll bool
	}{
		{dir: "../../deploy/base"},
		{dir: "../../deploy/overlays/production"},
		{dir: "../../deploy/overlays/dev"},
		{dir: "../../deploy/overlays/production", components: []string{"../../deploy/components/cluster-read"}, clusterAll: true},
		{dir: "../../deploy/overlays/dev", components: []string{"../../deploy/components/cluster-read"}, clusterAll: true},
	} {
		name := strings.TrimPrefix(tc.dir, "../../deploy/")
		for _, c := range tc.components {
			name += "+" + filepath.Base(c)
		}
		t.Run(name, func(t *testing.T) {
			r, err := deploy.BuildWith(tc.dir, tc.components...)
			if err != nil {
				t.Fatal(err)
			}
			policy := shippedPolicy(t, r)
			var reached []string
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				reached = append(reached, req.URL.Path)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
			}))
			defer api.Close()
			kube, err := hostproxy.NewKube(&rest.Config{Host: api.URL}, "test", policy)
			if err != nil {
				t.Fatal(err)
			}
			defer kube.CloseIdleConnections()
			status := func(path string) int {
				resp, err := kube.RoundTrip(context.Background(), hostproxy.Request{Method: http.MethodGet, Path: path})
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				// The body is streamed: read and close it.
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.Status
			}

			if tc.clusterAll {
				if len(policy.Namespaces) != 0 || !canRead(rbacGrants(t, r, ""), "pods") {
					t.Errorf("cluster-read: policy namespaces %v, cluster-wide RBAC read %v; want all", policy.Namespaces, canRead(rbacGrants(t, r, ""), "pods"))
				}
				if st := status("/api/v1/namespaces/" + outside + "/pods"); st != http.StatusOK {
					t.Errorf("cluster-read: pods in %s = %d", outside, st)
				}
				return
			}
			if len(policy.Namespaces) == 0 {
				t.Fatal("the shipped DaemonSet lets sandboxed code read every namespace")
			}
			// RBAC grants exactly the policy's namespaces (among those it names).
			granted := map[string]bool{}
			for _, o := range r.Find("RoleBinding", "") {
				ns := o["metadata"].(map[string]any)["namespace"].(string)
				if canRead(rbacGrants(t, r, ns), "pods") {
					granted[ns] = true
				}
			}
			for _, ns := range policy.Namespaces {
				if !granted[ns] {
					t.Errorf("the policy allows %s, which RBAC does not grant", ns)
				}
				if st := status("/api/v1/namespaces/" + ns + "/pods"); st != http.StatusOK {
					t.Errorf("pods in the allowed namespace %s = %d", ns, st)
				}
				delete(granted, ns)
			}
			for ns := range granted {
				t.Errorf("RBAC grants %s, which the policy does not list", ns)
			}
			for _, rules := range [][]rbacv1.PolicyRule{rbacGrants(t, r, ""), rbacGrants(t, r, outside)} {
				for _, res := range []string{"pods", "pods/log", "secrets", "nodes", "namespaces"} {
					if canRead(rules, res) {
						t.Errorf("RBAC grants %s outside the list", res)
					}
				}
			}
			before := len(reached)
			for _, path := range []string{
				"/api/v1/namespaces/" + outside + "/pods",
				"/api/v1/namespaces/" + outside + "/pods/etcd-0/log",
				"/api/v1/pods",
				"/api/v1/nodes",
				"/api/v1/namespaces",
				"/apis/apps/v1/namespaces/" + outside + "/deployments",
			} {
				if st := status(path); st != http.StatusForbidden {
					t.Errorf("GET %s = %d, want 403 from the policy", path, st)
				}
			}
			if len(reached) != before {
				t.Errorf("refused requests reached the API server: %v", reached[before:])
			}
		})
	}
}

// TestKubePolicyFlags: the namespaces come from the flag, else the
// environment; * is every namespace; a bad name is refused.
func TestKubePolicyFlags(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "EXECFARM_KUBE_NAMESPACES" {
				return v
			}
			return ""
		}
	}
	for _, tt := range []struct {
		flag []string
		env  string
		want string // namespaces joined; "all"; "error"
	}{
		{nil, "", "all"},
		{nil, "default, monitoring", "default,monitoring"},
		{[]string{"team-a"}, "default", "team-a"},
		{nil, "*", "all"},
		{[]string{"*"}, "", "all"},
		{nil, "*,default", "error"},
		{nil, "Default", "error"},
		{nil, " , ", "error"},
	} {
		p, err := kubePolicy(nil, tt.flag, env(tt.env))
		got := strings.Join(p.Namespaces, ",")
		switch {
		case err != nil:
			got = "error"
		case got == "":
			got = "all"
		}
		if got != tt.want {
			t.Errorf("flag %v env %q: %s (%v), want %s", tt.flag, tt.env, got, err, tt.want)
		}
	}
}
