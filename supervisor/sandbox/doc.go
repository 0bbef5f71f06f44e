// Package sandbox starts, drives and destroys sandboxes from the
// supervisor side: one cgroup, one worker process forked into fresh
// namespaces through a go-plugin runner that knows the sandbox, and one
// gRPC client to the worker's Worker service. The fork itself happens in
// the process's fork server (package isolation/forkserver), so that its
// cost does not grow with the supervisor's memory. It is the mechanism
// only: it knows no owner, quota or expiry (supervisor/session does).
// Linux only; elsewhere every call fails with an error wrapping
// isolation.ErrNotSupported.
//
// # Single-use sandboxes
//
// A Sandbox is single-use by default: Start, one Run, Close. With reuse
// it serves several Runs, one at a time, with a Reset between them (what
// a reset guarantees is on Reset). Close kills every process in the
// sandbox's cgroup, removes the cgroup, and removes the per-sandbox host
// directory that held the plugin socket and the root mountpoint; nothing
// of the sandbox survives it.
//
// # Session sandboxes
//
// Start with Spec.Session (which needs Spec.Limits.PidsMax) makes a
// sandbox kept across many execs and file operations until Close, which
// leaves nothing, as above. A warm pool of single-use sandboxes never
// serves one (Spec equality). It refuses Run, Prepare and Reset, and a
// single-use sandbox refuses the calls below, with ErrNotSupported's
// sibling ErrNotSession.
//
//	sb, _ := sandbox.Start(ctx, cfg, sandbox.Spec{Limits: l, Session: true})
//	e, _ := sb.Exec(ctx, sandbox.ExecRequest{Run: req, StdinOpen: true})
//	go e.WriteStdin(b); e.CloseStdin(); e.Signal(syscall.SIGINT); e.Kill()
//	exit, err := e.Wait(onEvent)   // output chunks in order, then the Exit
//	e.Usage()                      // CPU time, pids peak (its cgroup)
//	sb.Upload(ctx, "dir/f", 0o644, r); rd, _ := sb.Download(ctx, "dir/f")
//	sb.List(ctx, "dir", 1000); sb.Stat(ctx, "f"); sb.Remove(ctx, "dir", true)
//	sb.Mkdir(ctx, "a/b", 0o755, true); sb.RunningExecs(); sb.Close()
//
// Exec: up to MaxConcurrentExecs (16) at once, ErrTooManyExecs beyond.
// Each exec's runtime process (any runtime; the caller builds the
// request, e.g. /bin/sh -c in /workspace) runs as the sandbox user in its
// own process group and in its own cgroup, payload/x<N>, which this
// package creates and hands to the worker over a descriptor channel
// (SOCK_SEQPACKET, SCM_RIGHTS) before the call: on cgroup v1 the worker's
// forking thread joins it for the fork, so the process is born there; on
// v2 the process is held at a gate until the worker has moved it there.
// Signal reaches the exec's process group; Kill, and the end of the ctx
// given to Exec (a timeout, a cancel), kill the exec's whole cgroup, so
// daemons that double-forked and called setsid die too, and neither the
// sandbox nor its other execs. An exec that ends by itself leaves its
// background processes running (the cgroup stays until they end or Close).
// Files written by one exec are there for the next: /workspace and /tmp
// persist. The rlimits of every exec of a sandbox must be the same (the
// worker sets them on itself before it forks and cannot raise them again),
// and RLIMIT_NOFILE at least MinSessionFileDescriptors (256): the worker
// needs descriptors for its execs and file calls under it.
//
// Files: paths are absolute or relative to /workspace (rootfs.SandboxPath;
// ".." above the root is ErrInvalidPath). The worker resolves them in the
// sandbox's own root with openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS and
// acts as the sandbox user (a thread with its filesystem ids), so a link
// or ".." planted by the sandboxed program cannot reach a host path or
// another sandbox's file, and a file call can do nothing the program could
// not. Transfers stream in chunks of at most 64 KiB (ChunkBytes) under
// gRPC flow control, with the connection's windows fixed (256 KiB per
// stream, 1 MiB per connection), so neither side holds a whole file: an
// upload goes to a hidden file renamed over its target at the end, and
// one that fails (ErrNoSpace when the workspace is full) leaves nothing.
// List holds at most maxEntries (≤ MaxListEntries) entries on either side,
// and the supervisor at most MaxListBytes of their paths and link
// targets, whatever the directory's size. At most MaxConcurrentFileCalls (16) file
// calls run at once per sandbox; more wait their turn. Errors are *FileError wrapping the
// sentinels of errors.go; each names the gRPC status the public API gives
// it.
//
// Methods of a Sandbox and an Exec are safe for concurrent use, except
// Foreground (the one execution holding a warm sandbox calls it) and
// Exec.Wait (once).
package sandbox
