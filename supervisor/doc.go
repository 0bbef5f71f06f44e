// Package supervisor is execfarm's server: it serves
// prodisco.sandbox.v1.SandboxService (plus grpc.health.v1 and server
// reflection), validates requests, admits them through the scheduler, runs
// each execution in a fresh sandbox, and keeps output and results in the
// registry. It never runs untrusted code itself.
//
// Lifetimes: New returns a Server whose executions run until Shutdown.
// Shutdown refuses new work, lets running executions finish within the
// grace period, then kills what is left; nothing outlives it.
package supervisor
