// Package namespace builds the clone flags and id maps with which the
// supervisor forks a worker, and the in-sandbox steps that only touch
// namespaces (hostname, loopback).
//
// The worker is forked with CLONE_NEWUSER|NEWPID|NEWNS|NEWNET|NEWIPC|NEWUTS
// (DESIGN.md, "Isolation, in order") and enters a new cgroup namespace
// itself (UnshareCgroup) once it is in its own cgroup. Its user namespace maps
// uids and gids 0..Size-1 inside to HostID..HostID+Size-1 on the host, an
// unprivileged range that no other live sandbox uses, and it is owned by
// HostID itself (the fork server creates it with that effective uid), so
// that the kernel charges the sandbox's per-user counters (queued signals,
// inotify, message queues) to the sandbox's own host uid, never to host
// root. Go's fork is safe here: the child is single-threaded until exec,
// and the parent writes the id maps before the child runs.
package namespace
