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
// Bodies are streamed both ways in chunks of at most ChunkBytes (Server,
// over a bidirectional gRPC call per request), never held whole: a
// request body is bounded by MaxRequestBytes, a response is as long as
// the upstream makes it (a watch's timeoutSeconds is capped at
// MaxWatchSeconds). Requests in flight are bounded per sandbox
// (MaxRequestsPerSandbox, the broker server's stream limit: more wait in
// the sandbox's worker) and in all (MaxRequests: more wait here, holding
// nothing), and the upstreams are reached over HTTP/1.1 (Go's HTTP/2
// client would buffer a 4 MiB receive window of every unread response in
// the supervisor), so the proxy's memory is a few MiB whatever sandboxes
// ask.
package hostproxy
