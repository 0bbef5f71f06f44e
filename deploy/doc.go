// Package deploy holds execfarm's Kubernetes manifests and renders them
// for tests. base/ is the supervisor on every node (namespace, RBAC
// granting read in a listed set of namespaces, the privileged DaemonSet
// with its probes, NetworkPolicy); overlays/production and overlays/dev
// build on it; components/cluster-read opts into cluster-wide read;
// monitoring/ holds the Prometheus Operator objects (PodMonitor,
// PrometheusRule) and the Grafana dashboard.
//
// Build renders a kustomization with kustomize's own Go API (krusty), as
// `kubectl apply -k` would. The tests here validate every rendering with
// kubeconform in strict mode, against JSON schemas generated from the
// OpenAPI document of the Kubernetes version go.mod pins (and the CRDs of
// cert-manager and the Prometheus Operator), all from the Go modules
// schema-modules.txt lists, and read the Dockerfile,
// since no image is built in CI.
package deploy
