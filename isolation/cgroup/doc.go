// Package cgroup creates, limits, measures, kills and removes the one
// cgroup that each sandbox runs in, on cgroup v1 and on cgroup v2 alike.
//
// The supervisor creates the cgroup with New before it forks the worker
// (DESIGN.md, "Isolation, in order"). On v2 the worker is born inside it,
// in its worker leaf (SysProcAttr.UseCgroupFD with Manager.FD); on v1 the
// worker waits on a sync pipe until the supervisor has called
// Manager.AddProc. The caller
// owns the Manager: it calls Delete exactly when the sandbox ends, also on
// error paths, and Cleanup once at start-up for a crashed predecessor's
// cgroups. Linux only: elsewhere every call returns an error wrapping
// ErrNotSupported.
//
// # Where the cgroups live
//
// Every sandbox cgroup is Parent/name, and Parent belongs to execfarm alone
// (Cleanup removes whatever it finds there). By default Parent is nested
// under the supervisor's own cgroup, so the node's accounting of the
// supervisor's pod or service keeps holding: on v1 in each controller
// (containerd cgroup1.NestedPath); on v2 under the cgroup the supervisor
// was started in, once Place has moved the processes there into the leaf
// SupervisorLeafName and enabled memory, cpu and pids for its children
// (v2's "no internal process" rule forbids enabling them on a cgroup that
// holds processes; Place is what container runtimes do in a delegated
// cgroup). On v2 a sandbox cgroup holds no process either: the worker is in
// its leaf WorkerLeafName (born there, FD), the program in PayloadName, and
// the limits, the kill and the usage are the sandbox cgroup's, covering
// both. Config.AbsoluteParent takes Parent from the hierarchy root as is.
//
// # Limits
//
// v2: memory.max, memory.swap.max=0, memory.oom.group=1 (0 with
// Limits.NoOOMGroup), pids.max,
// cpu.max. v1: memory.limit_in_bytes and memory.memsw.limit_in_bytes (the
// same value, so swap is 0), memory.kmem.tcp.limit_in_bytes (the same
// value: v1 keeps TCP socket buffers out of memory.usage_in_bytes, in a
// counter of their own, while v2 charges them to memory.max), pids.max,
// cpu.cfs_period_us/cfs_quota_us.
// When swap accounting is off, v1 has no memory.memsw.* files and v2 no
// memory.swap.max: the limit is then skipped and Warnings says so; swap use
// is still 0 as long as the host has no active swap device (the warning
// names the case where it has one). v1 has no memory.oom.group: the kernel
// OOM-kills one process, and the caller kills the whole cgroup with Kill
// once OOMKilled reports true.
//
// # Usage and its sources
//
// Peak memory comes from memory.peak (v2, Linux 5.19+) or
// memory.max_usage_in_bytes (v1); on older v2 kernels it falls back to the
// highest memory.current seen by Sample and at the read, a lower bound, and
// Usage.PeakMemorySource names which one was used (DESIGN.md forbids memory
// figures whose source is not said). CPU time comes from cpu.stat
// user_usec/system_usec (v2) or, on v1, the precise cpuacct.usage (ns)
// split in the ratio of the tick-sampled cpuacct.usage_user/usage_sys, as
// the kernel's cputime_adjust does for getrusage (the sampled figures alone
// drift by 10 % and more under load; cpuacct.stat in USER_HZ ticks on
// kernels before 4.7); Exec.CPU reads the same files of an exec's cgroup
// (on v1 its cgroup in the cpuacct hierarchy). Pids peak comes from
// pids.peak where the kernel has it, else from the highest pids.current
// seen by Sample. OOM kills come from memory.events oom_kill (v2) or
// memory.oom_control oom_kill (v1, Linux 4.13+).
//
// containerd/cgroups v3 creates the cgroups and writes the limits
// (cgroup1.New over a hierarchy of exactly memory, cpu, cpuacct, pids and
// freezer; cgroup2.NewManager from an OCI specs.LinuxResources converted by
// cgroup2.ToResources), and places processes on v1. This package reads the
// usage files itself: containerd's Stat reports a missing v2 file as 0 (so
// "no memory.peak" and "peak 0" look alike), reads v1 CPU time in 10 ms
// ticks, and fails as a whole on v1 when memory.memsw.* is absent. Kill is
// also this package's own: containerd's v2 fallback kill waits for the
// killed processes, which would steal the exit status of a worker that the
// caller's exec.Cmd is waiting for, and containerd's v1 freeze loops without
// a deadline.
package cgroup
