// Package isolation groups the Linux mechanisms that make a sandbox:
// namespaces and id maps (namespace), mounts and pivot_root (rootfs),
// cgroups (cgroup), the seccomp filter (seccomp), and the host probe
// (probe). Each sub-package compiles on every GOOS; off Linux its calls
// return an error wrapping ErrNotSupported.
package isolation
