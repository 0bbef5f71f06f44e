// Package execution runs executions: a validated request (a Job) waits for
// a scheduler slot, gets a sandbox from its Placement, attaches the
// Kubernetes/Prometheus proxy when configured, runs the program with its
// output written into the registry, reads the sandbox's usage, classifies
// how the run ended, publishes the result once nothing of the execution
// can run any more, and releases the sandbox (run.go draws the steps). Cancel, timeout and the CPU-time
// limit all go through one stop, which records the first reason and kills
// the run's processes through the Placement.
//
// Where the sandbox comes from is the Placement's business. Submit uses
// the Runner's own: a warm sandbox or one started on demand, destroyed
// after the run or, with SandboxReuse, reset and given back to the warm
// pool. SubmitIn takes another, such as a sandbox held across many
// executions, which it neither takes from the pool nor destroys.
//
// Lifetimes: a Runner's executions run until Shutdown, which refuses new
// ones, cancels queued ones, waits up to its grace for running ones and
// kills the rest. A result is published only once nothing of the
// execution can run any more. Its errors (errors.go) are plain Go errors:
// the supervisor maps them to the statuses its clients see. The only gRPC
// it speaks is the HostProxy it serves to a sandbox over the go-plugin
// broker (proxy.go), whose one refusal, an unknown target, is the
// worker's concern, not a client's.
package execution
