// Package sandbox starts, drives and destroys sandboxes from the
// supervisor side: one cgroup, one worker process forked into fresh
// namespaces through a go-plugin runner that knows the sandbox, and one
// gRPC client to the worker's Worker service. The fork itself happens in
// the process's fork server (package isolation/forkserver), so that its
// cost does not grow with the supervisor's memory.
//
// A Sandbox is single-use by default: Start, one Run, Close. With reuse
// it serves several Runs, one at a time, with a Reset between them (what
// a reset guarantees is on Reset). Close kills every process in the
// sandbox's cgroup, removes the cgroup, and removes the per-sandbox host
// directory that held the plugin socket and the root mountpoint; nothing
// of the sandbox survives it. Linux only.
package sandbox
