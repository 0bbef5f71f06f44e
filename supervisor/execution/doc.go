// Package execution runs executions: a validated request (a Job) waits for
// a scheduler slot, gets a sandbox (from the warm pool, or started on
// demand), attaches the Kubernetes/Prometheus proxy when configured, runs
// the program with its output written into the registry, reads the
// sandbox's usage, classifies how the run ended, and releases the sandbox
// (destroyed, or reset and given back to the pool) before the result is
// published. Cancel, timeout and the CPU-time limit all go through one
// stop, which records the reason and kills the sandbox's processes.
//
// Lifetimes: a Runner's executions run until Shutdown, which refuses new
// ones, cancels queued ones, waits up to its grace for running ones and
// kills the rest. A result is published only once nothing of the
// execution can run any more and its sandbox is gone or reset. The
// package knows no gRPC: callers map its errors (errors.go) to statuses.
package execution
