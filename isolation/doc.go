// Package isolation groups the Linux mechanisms that make a sandbox:
// namespaces and id maps (namespace), mounts and pivot_root (rootfs),
// cgroups (cgroup), the seccomp filter (seccomp, seccomp/install),
// Landlock (landlock), capabilities (capability), the System V IPC
// limits of an IPC namespace (sysvipc), the fork server that
// clones every worker (forkserver), and the host probe (probe). Each
// sub-package compiles on every GOOS; off Linux, or on a kernel without
// the mechanism, its calls return an error wrapping ErrNotSupported. A
// sub-package's own sentinel (landlock.ErrNotSupported, ...) keeps its
// text and wraps it (NotSupported), so errors.Is(err,
// isolation.ErrNotSupported) holds for all of them.
package isolation
