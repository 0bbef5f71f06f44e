// Package sysvipc bounds the System V IPC (shared memory, message queues,
// semaphore sets) of a sandbox's IPC namespace, so that what a program
// leaves there, which outlives the program and belongs to no process, is
// bounded like its tmpfs files.
//
// A segment left with no process attached is charged to the sandbox's
// memory cgroup but is in no tmpfs mount that a size bounds: in a 128 MiB
// session sandbox 120 MiB of segments and then an 8 MiB upload OOM-killed
// the worker (red-team pass). Limits are the kernel.shm*, kernel.msg* and
// kernel.sem sysctls of one IPC namespace; LimitsFor computes them from
// the size of the sandbox's /dev/shm, and Apply writes them into the
// namespace of a running process and reads them back.
//
// Apply is the supervisor's (host root's) call, made after the worker has
// been forked into its namespaces and before any program runs in them: a
// user namespace's root may write these sysctls itself only from Linux
// 6.9 (commit 50ec499b9a43, "sysctl: allow change system v ipc sysctls
// inside ipc namespace"), and the same commit took that right from host
// root, so Apply writes as the owner the kernel gives the files (host
// root before 6.9, the namespace's root after). Linux only; elsewhere
// Apply returns an error wrapping isolation.ErrNotSupported.
package sysvipc
