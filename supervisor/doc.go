// Package supervisor is execfarm's server: it serves
// prodisco.sandbox.v1.SandboxService (plus grpc.health.v1 and server
// reflection), validates requests, and hands each execution to
// supervisor/execution, which admits it through the scheduler, runs it in
// a sandbox and keeps output and results in the registry. It never runs
// untrusted code itself.
//
// This package is the gRPC surface and the wiring only: Server, Config,
// New, ListenAndServe, Embedded and the handlers. What an execution does
// lives in supervisor/execution, its limits in supervisor/limits, and
// what the supervisor does to the host at start (probe, locks, clean-up)
// in supervisor/host; none of them imports this package. Their errors
// reach callers through one map, rpcError (errors.go).
//
// Orchestrators probe it over HTTP (health.go): ServeProbes serves
// GET /healthz (liveness, which depends on nothing outside the process),
// /startupz (the fork server's first start) and /readyz (Readiness: the
// fork server alive, the cgroup parent writable, the Kubernetes API
// reachable when configured; a generic reason when not, the details
// logged), and grpc.health.v1's readiness follows the last result.
//
// Lifetimes: New returns a Server whose executions run until Shutdown.
// Shutdown refuses new work, lets running executions finish within the
// grace period, then kills what is left; nothing outlives it.
package supervisor
