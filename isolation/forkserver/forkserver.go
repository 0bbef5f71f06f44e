// Package forkserver starts sandbox workers from a small helper process
// instead of the supervisor itself.
//
// Why: a worker is cloned into a new user namespace, and the parent must
// write its uid and gid maps between the clone and the exec. Go therefore
// forks without CLONE_VM|CLONE_VFORK when CLONE_NEWUSER is asked for
// (syscall.forkAndExecInChild1): the kernel copies the parent's page
// tables, the child unmaps the copy again at exec, and the parent takes a
// copy-on-write fault for every page it writes afterwards. The cost grows
// with the parent's resident memory: about 1.5 ms from a fresh Go
// process, 5 ms from one holding 50 MiB, 15 ms at 200 MiB (measured on
// the development VM), and the supervisor's registry holds up to its
// whole output budget. The fork server is a Go process that holds almost
// nothing, so the copy stays small however large the supervisor grows.
//
// The fork server is the worker binary run with Arg as its first argument
// (cmd/execfarm-worker); it serves one SOCK_SEQPACKET unix socket on fd
// ConnFD. Each request carries what syscall.ForkExec needs, the child's
// file descriptors travel as SCM_RIGHTS. The server forks every child
// from its main thread, locked and alive as long as the process, so a
// child's Pdeathsig fires only when the fork server itself dies; the
// fork server is started with Pdeathsig SIGKILL by the supervisor, so a
// dead supervisor takes the fork server and then every worker with it.
//
// A child forked into a new user namespace gets a namespace owned by the
// host uid and gid its root maps to (the sandbox's own), not by the fork
// server's root: the forking thread takes that effective uid and gid for
// the clone only (owner_linux.go). The kernel charges what it counts per
// user (queued signals, inotify, message queues) at each namespace level
// to the owner of the namespace below, so host root's counters are never
// charged for a sandbox. A spawn of a user namespace that maps no uid or
// gid 0 is refused.
//
// A child is not reaped when it exits: the server reports the exit (the
// waitid WNOWAIT status) and reaps only when the client releases the
// process (Process.Release, which returns once the server answers that it
// has reaped it). Until then the pid cannot be reused, so the
// supervisor may name the process by pid (cgroup placement, /proc/PID)
// for as long as its sandbox exists. Signals travel through a pidfd.
//
// A spawn that fails in the server comes back as its error text and the
// errno at its root (a *SpawnError on the client, which unwraps to the
// syscall.Errno), never as a bare string: errors.Is(err, syscall.EPERM)
// holds on the client as it did in the server.
package forkserver

// Arg is the first argument that makes the worker binary a fork server.
const Arg = "--fork-server"

// ConnFD is the fork server's socket: fd 3, the first of exec.Cmd's
// ExtraFiles.
const ConnFD = 3

// version is the protocol's version: the server says it first, and a
// client refuses a server that speaks another (a worker binary older or
// newer than the supervisor).
const version = 2
