// Package deploy holds execfarm's Kubernetes manifests (base/: namespace,
// RBAC, privileged DaemonSet, Service, cert-manager Certificate) and tests
// that parse them and the Dockerfile, since no image is built in CI.
package deploy
