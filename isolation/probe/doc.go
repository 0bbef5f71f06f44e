// Package probe is the host check: it finds out, by trying, which isolation
// layers this host gives execfarm — every namespace kind the worker is
// forked into, the cgroup hierarchy and each controller, seccomp, the
// landlock ABI, overlayfs, and whether the planned sandbox uid ranges are
// free — and decides, from the operator's --allow-degraded list, whether the
// supervisor may start. `execfarm doctor` prints the Report; the supervisor
// runs the same Run at start and refuses to start on the error of
// Report.Missing (DESIGN.md, "The probe": a silent fallback to weaker
// isolation is a bug).
//
// # What counts as available
//
// A namespace kind is available when a child process was forked into a new
// namespace of that kind, inside a new user namespace with the planned id
// map (as the worker is), and its /proc/PID/ns link differs from the
// prober's. A file in /proc/self/ns is not proof: the user.max_*_namespaces
// sysctls, kernel.unprivileged_userns_clone and LSM policy can forbid
// creating one. The mount namespace trial also remounts / recursively
// private inside it, the worker's first mount. A cgroup controller is
// available when it is mounted (v1) or delegated (v2) and a test cgroup
// could be created and removed under the sandboxes' parent
// (cgroup.Probe). The uid range is available when it fits below 2^32-1 and
// no running process, /etc/passwd or /etc/group entry, or /etc/subuid or
// /etc/subgid range uses an id in it.
//
// # Which layers may be degraded
//
// Only layers the supervisor can really switch off may be named in
// --allow-degraded: today that is "seccomp" (the worker then loads no
// filter). Namespaces, the cgroup and its controllers, the uid range and
// landlock cannot be degraded: sandboxes need their cgroup to be killed
// and limited, the worker always forks into every namespace, two sandboxes
// must never share a host uid, and the worker applies landlock wherever the
// kernel has it. Naming one of them, or an unknown name, is an error rather
// than a silent no-op, so that a typo never starts a supervisor the
// operator did not ask for.
//
// Landlock is required when the kernel has it (ABI >= 1) and reported as
// information ("not available on this kernel") when it does not, per
// DESIGN.md "landlock where the kernel has it". Overlayfs is information
// only: execfarm's root filesystem is built from bind mounts.
//
// Run is Linux only; elsewhere every layer is reported unavailable with a
// detail naming isolation.ErrNotSupported. Run forks short-lived children
// (/bin/cat, or Config.TrialBinary) and creates and removes test cgroups;
// it needs the privileges the supervisor runs with (root).
package probe
