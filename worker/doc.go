// Package worker is the agent inside a sandbox. The worker binary
// (cmd/execfarm-worker) is cloned into fresh namespaces by the fork server
// (isolation/forkserver: the same binary run with --fork-server, started
// once per supervisor process), at the supervisor's request;
// Main waits to be placed in its cgroup (cgroup v1), applies the in-sandbox
// isolation (root filesystem, hostname, loopback, rlimits: no core dumps
// and the per-user counters RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE,
// no_new_privs, seccomp) once go-plugin has created its unix socket, and then serves the
// execfarm.worker.v1 Worker service: each Run starts one runtime process as
// the sandbox user (uid 1000) and streams its stdout and stderr back.
//
// A session sandbox's worker (plugin.SandboxConfig.Session) serves Exec
// instead: up to plugin.MaxConcurrentExecs runtime processes at once, each
// in its own process group and its own cgroup (session_linux.go draws the
// exchange), with streamed stdin and signals; and the file calls (Upload,
// Download, List, Stat, Remove, Mkdir), whose path operations run on one
// thread with the sandbox user's filesystem ids and resolve every path in
// the sandbox's root with openat2 (fsroot_linux.go says why).
//
// The worker is pid 1 of the sandbox's pid namespace: it reaps every
// orphan, and when it exits the kernel kills everything left in the
// sandbox. Keep it lean: its start-up is paid for every sandbox.
//
// Lifecycle (see proto/PROTOCOL.md):
//
//	supervisor                                  worker (pid 1 in sandbox)
//	  create cgroup, set limits
//	  spawn request to the fork server, which
//	  clones and execs the worker (clone flags,
//	  id maps; v2: into its cgroup)           ──▶ start; v1: block on sync fd
//	  v1: write pid to cgroup, close sync fd  ──▶ go-plugin: listen on socket
//	                                              rootfs, pivot_root, hostname,
//	                                              lo up, rlimits, NNP, seccomp
//	  ◀── handshake line "1|1|unix|SOCK|grpc" ─── serve Worker
//	  Run(RunRequest)                         ──▶ fork runtime as uid 1000
//	  ◀── RunEvent{stdout|stderr}* , Exit    ─── pump pipes, reap
//	  read cgroup usage, kill cgroup, delete
//	  (with reuse: Reset instead, then the next Run)
package worker
