// Package hostproxy is the supervisor's end of credential-free Kubernetes
// and Prometheus access for sandboxed code (DESIGN.md, "Kubernetes and
// Prometheus access from sandboxed code"). A sandbox never receives a
// credential: its worker forwards each HTTP request over the go-plugin
// broker to the supervisor, where Kube checks it against a policy (default:
// verbs get, list and watch in every namespace), adds the credentials of the
// supervisor's kubeconfig with client-go, forwards it and counts it by verb
// and outcome. The policy sees a request as the API server will: it is
// classified by k8s.io/apiserver's RequestInfoFactory, anything not in
// canonical form or not classified as a resource request or a discovery
// read is refused (fail closed), and the path forwarded is the classified
// one, never the raw one; Prometheus admits only the read-only query API of
// PROMETHEUS_URL.
//
// Requests and responses are whole messages with bounded bodies
// (MaxRequestBytes, MaxResponseBytes); a watch is answered when the API
// server ends it (its timeoutSeconds is capped at MaxWatchSeconds).
package hostproxy
