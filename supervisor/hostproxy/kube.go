package hostproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
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
//
// The API server is reached over HTTP/1.1, never HTTP/2: Go's HTTP/2
// client buffers up to its 4 MiB receive window of every response a
// sandbox leaves unread, in the supervisor; over HTTP/1.1 an unread
// response waits in its own connection's socket buffers.
func NewKube(cfg *rest.Config, context string, policy KubePolicy) (*Kube, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
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

// CloseIdleConnections closes the idle connections to the API server (at
// shutdown; tests).
func (k *Kube) CloseIdleConnections() { utilnet.CloseIdleConnectionsFor(k.rt) }

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
	// Forward the path as classified, never the raw one.
	req.Path = ri.Path
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
	return Response{Status: code, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b))}
}

// KubeRequest is what a Kubernetes API request asks for, as the API
// server itself classifies it (k8s.io/apiserver's RequestInfoFactory).
type KubeRequest struct {
	// Verb is the RBAC verb (get, list, watch, create, update, patch,
	// delete, deletecollection); "get" for discovery paths.
	Verb string
	// Namespace is "" for cluster-scoped resources and discovery paths; for
	// a namespace object (/api/v1/namespaces/NAME) it is NAME.
	Namespace string
	// Resource, Name and Subresource; "" for collections (Name), plain
	// objects (Subresource) and discovery paths (all three).
	Resource, Name, Subresource string
	// Path is what is forwarded: the classified path, escaped again, with
	// the query encoded again (never the raw request URI).
	Path string
}

// kubeRequestInfo is the API server's own request classifier, configured
// as kube-apiserver configures it.
var kubeRequestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// deniedSubresources reach beyond the API server's objects (a pod's or
// node's HTTP endpoints, a shell, a port): never forwarded, whatever the
// verbs allowed. The proxy carries plain HTTP only anyway.
var deniedSubresources = []string{"proxy", "exec", "attach", "portforward"}

// ParseKubeRequest classifies a request with the API server's own
// RequestInfoFactory and fails closed: it refuses (an error, answered 400)
// a path that is not in canonical form (an empty, "." or ".." segment, a
// trailing slash, an escaped '/' or '%'), a resource request with an empty
// resource, more than resource/name/subresource, or the proxy verb, a
// subresource in deniedSubresources, a watch path with a method other than
// GET or HEAD, a method other than GET, HEAD, POST,
// PUT, PATCH and DELETE, and a non-resource path other than discovery
// (GET or HEAD of /api, /apis, /version, /api/VERSION, /apis/GROUP,
// /apis/GROUP/VERSION, /openapi/v2, /openapi/v3 and below). The legacy
// /api/v1/watch/... paths are watches, as the API server treats them.
func ParseKubeRequest(method, rawPath string) (KubeRequest, error) {
	u, err := url.ParseRequestURI(rawPath)
	if err != nil || u.IsAbs() || u.Host != "" || u.Opaque != "" {
		return KubeRequest{}, fmt.Errorf("bad request path %q", rawPath)
	}
	if u.RawPath != "" || !canonicalPath(u.Path) {
		return KubeRequest{}, fmt.Errorf("path %q is not in canonical form (empty, dot or escaped segments)", rawPath)
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return KubeRequest{}, fmt.Errorf("method %q not supported", method)
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return KubeRequest{}, fmt.Errorf("bad query: %w", err)
	}
	norm := &url.URL{Path: u.Path, RawQuery: query.Encode()}
	hreq := &http.Request{Method: method, URL: norm}
	ri, err := kubeRequestInfo.NewRequestInfo(hreq)
	if err != nil {
		return KubeRequest{}, fmt.Errorf("classify %q: %w", u.Path, err)
	}
	if !ri.IsResourceRequest {
		if (method != http.MethodGet && method != http.MethodHead) || !discoveryPath(u.Path) {
			return KubeRequest{}, fmt.Errorf("%s %q is not a resource request or discovery path", method, u.Path)
		}
		return KubeRequest{Verb: "get", Path: norm.RequestURI()}, nil
	}
	switch {
	case ri.Verb == "" || ri.Verb == "proxy":
		return KubeRequest{}, fmt.Errorf("%s %q: verb %q not supported", method, u.Path, ri.Verb)
	case ri.Verb == "watch" && method != http.MethodGet && method != http.MethodHead:
		return KubeRequest{}, fmt.Errorf("%s on watch path %q", method, u.Path)
	case ri.Resource == "" || len(ri.Parts) > 3:
		return KubeRequest{}, fmt.Errorf("%q does not name a resource", u.Path)
	case slices.Contains(deniedSubresources, ri.Subresource):
		return KubeRequest{}, fmt.Errorf("subresource %q is never forwarded", ri.Subresource)
	}
	return KubeRequest{Verb: ri.Verb, Namespace: ri.Namespace, Resource: ri.Resource,
		Name: ri.Name, Subresource: ri.Subresource, Path: norm.RequestURI()}, nil
}

// canonicalPath reports whether p is an absolute path without empty, "."
// or ".." segments and without a trailing slash ("/" itself excepted).
func canonicalPath(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "%\\") {
			return false
		}
	}
	return true
}

// discoveryPath reports whether p is one of the API server's discovery
// documents (non-resource paths that kubectl and client libraries read).
func discoveryPath(p string) bool {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch segs[0] {
	case "api":
		return len(segs) <= 2
	case "apis":
		return len(segs) <= 3
	case "version":
		return len(segs) == 1
	case "openapi":
		return len(segs) >= 2 && (segs[1] == "v2" && len(segs) == 2 || segs[1] == "v3")
	}
	return false
}
