package hostproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubePolicy says which Kubernetes requests a sandbox may make.
type KubePolicy struct {
	// Verbs allowed (Kubernetes RBAC verbs: get, list, watch, create,
	// update, patch, delete, deletecollection). Empty = get, list, watch.
	Verbs []string
	// Namespaces allowed for namespaced resources. Empty = all.
	// Cluster-scoped resources are allowed when Namespaces is empty.
	Namespaces []string
}

// DefaultVerbs is the read-only default of KubePolicy.Verbs.
var DefaultVerbs = []string{"get", "list", "watch"}

// Kube forwards sandbox requests to the Kubernetes API server with the
// supervisor's credentials, after the policy admits them.
type Kube struct {
	base    *url.URL
	rt      http.RoundTripper
	policy  KubePolicy
	context string
	// Counts counts requests by verb and outcome.
	Counts Counter
}

// LoadKube loads the kubeconfig at path (client-go's loading rules: "" uses
// $KUBECONFIG and ~/.kube/config) or, when none is found, the in-cluster
// config. It returns (nil, nil) when no configuration exists at all.
func LoadKube(path string, policy KubePolicy) (*Kube, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("hostproxy: load kubeconfig: %w", err)
	}
	var cfg *rest.Config
	context := raw.CurrentContext
	if len(raw.Contexts) > 0 {
		if cfg, err = cc.ClientConfig(); err != nil {
			return nil, fmt.Errorf("hostproxy: kubeconfig: %w", err)
		}
	} else if cfg, err = rest.InClusterConfig(); err != nil {
		if path != "" {
			return nil, fmt.Errorf("hostproxy: kubeconfig %s has no context", path)
		}
		return nil, nil
	} else {
		context = "in-cluster"
	}
	return NewKube(cfg, context, policy)
}

// NewKube returns a Kube forwarding to cfg's server with cfg's credentials.
func NewKube(cfg *rest.Config, context string, policy KubePolicy) (*Kube, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("hostproxy: kubernetes transport: %w", err)
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	base, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("hostproxy: kubernetes server %q: %w", cfg.Host, err)
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + strings.TrimSuffix(cfg.APIPath, "/")
	if len(policy.Verbs) == 0 {
		policy.Verbs = DefaultVerbs
	}
	return &Kube{base: base, rt: rt, policy: policy, context: context}, nil
}

// Context returns the name of the loaded kubeconfig context ("in-cluster"
// for the in-cluster config).
func (k *Kube) Context() string { return k.context }

// MaxReachableBytes bounds the body Reachable reads from the API
// server's /version answer (about 300 bytes from a real one).
const MaxReachableBytes = 64 << 10

// Reachable asks the API server for its version (GET /version, which
// every client may read: the system:public-info-viewer role) with the
// supervisor's credentials, within ctx. It returns nil when the server
// answers 200, else an error saying what happened (the connection's
// error, or the HTTP status: 401 means the credentials were refused).
// A readiness probe calls it; sandboxed code's requests do not pass here.
func (k *Kube) Reachable(ctx context.Context) error {
	u := *k.base
	u.Path = strings.TrimSuffix(k.base.Path, "/") + "/version"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("hostproxy: kubernetes API %s: %w", k.base.Host, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.rt.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("hostproxy: kubernetes API %s: %w", k.base.Host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxReachableBytes))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("hostproxy: kubernetes API %s: GET /version: %s", k.base.Host, resp.Status)
	}
	return nil
}

// RoundTrip checks req against the policy and forwards it. A denied request
// gets the API server's own answer shape: 403 with a Status object.
func (k *Kube) RoundTrip(ctx context.Context, req Request) (Response, error) {
	ri, err := ParseKubeRequest(req.Method, req.Path)
	if err != nil {
		k.Counts.Add("unknown", "denied")
		return kubeStatus(http.StatusBadRequest, "BadRequest", err.Error()), nil
	}
	if reason := k.deny(ri); reason != "" {
		k.Counts.Add(ri.Verb, "denied")
		return kubeStatus(http.StatusForbidden, "Forbidden", reason), nil
	}
	if ri.Verb == "watch" {
		req.Path = capWatch(req.Path)
	}
	resp, err := forward(ctx, k.rt, k.base, req)
	if err != nil {
		k.Counts.Add(ri.Verb, "error")
		return Response{}, err
	}
	k.Counts.Add(ri.Verb, "allowed")
	return resp, nil
}

func (k *Kube) deny(ri KubeRequest) string {
	if !slices.Contains(k.policy.Verbs, ri.Verb) {
		return fmt.Sprintf("execfarm policy: verb %q is not allowed (allowed: %s)", ri.Verb, strings.Join(k.policy.Verbs, ", "))
	}
	if len(k.policy.Namespaces) > 0 && ri.Resource != "" {
		if ri.Namespace == "" || !slices.Contains(k.policy.Namespaces, ri.Namespace) {
			return fmt.Sprintf("execfarm policy: namespace %q is not allowed", ri.Namespace)
		}
	}
	return ""
}

// capWatch bounds a watch's timeoutSeconds by MaxWatchSeconds.
func capWatch(path string) string {
	u, err := url.Parse(path)
	if err != nil {
		return path
	}
	q := u.Query()
	if n, err := strconv.Atoi(q.Get("timeoutSeconds")); err != nil || n <= 0 || n > MaxWatchSeconds {
		q.Set("timeoutSeconds", strconv.Itoa(MaxWatchSeconds))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func kubeStatus(code int, reason, msg string) Response {
	b, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code,
	})
	return Response{Status: code, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

// KubeRequest is what a Kubernetes API request asks for.
type KubeRequest struct {
	// Verb is the RBAC verb; "get" for non-resource paths (discovery).
	Verb string
	// Namespace is "" for cluster-scoped resources and non-resource paths.
	Namespace string
	// Resource and Name ("" for collections and non-resource paths).
	Resource, Name, Subresource string
}

// ParseKubeRequest derives the RBAC verb, namespace and resource of a
// request, as the API server's request-info resolver does for the
// /api/VERSION and /apis/GROUP/VERSION paths. Non-resource paths are
// admitted as "get" for GET and refused otherwise.
func ParseKubeRequest(method, path string) (KubeRequest, error) {
	u, err := url.Parse(path)
	if err != nil {
		return KubeRequest{}, fmt.Errorf("bad path: %w", err)
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for _, s := range segs {
		if s == ".." || s == "." {
			return KubeRequest{}, fmt.Errorf("bad path %q", u.Path)
		}
	}
	var rest []string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	default:
		if method != http.MethodGet {
			return KubeRequest{}, fmt.Errorf("%s on non-resource path %q", method, u.Path)
		}
		return KubeRequest{Verb: "get"}, nil
	}
	var ri KubeRequest
	if len(rest) == 0 {
		if method != http.MethodGet {
			return KubeRequest{}, fmt.Errorf("%s on discovery path %q", method, u.Path)
		}
		return KubeRequest{Verb: "get"}, nil
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ri.Namespace = rest[1]
		rest = rest[2:]
	}
	ri.Resource = rest[0]
	if len(rest) >= 2 {
		ri.Name = rest[1]
	}
	if len(rest) >= 3 {
		ri.Subresource = strings.Join(rest[2:], "/")
	}
	if ri.Resource == "namespaces" && ri.Namespace == "" && ri.Name != "" {
		ri.Namespace = ri.Name // a namespace object belongs to itself for the policy
	}
	watch := u.Query().Get("watch")
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "true" || watch == "1":
			ri.Verb = "watch"
		case ri.Name == "":
			ri.Verb = "list"
		default:
			ri.Verb = "get"
		}
	case http.MethodPost:
		ri.Verb = "create"
	case http.MethodPut:
		ri.Verb = "update"
	case http.MethodPatch:
		ri.Verb = "patch"
	case http.MethodDelete:
		if ri.Name == "" {
			ri.Verb = "deletecollection"
		} else {
			ri.Verb = "delete"
		}
	default:
		return KubeRequest{}, fmt.Errorf("method %q not supported", method)
	}
	return ri, nil
}
