// Package seccomp builds and loads the sandbox's seccomp filter: an
// allow-list of x86_64 syscalls that the worker installs on itself, on every
// one of its threads (TSYNC), as the last isolation step before serving, and
// that every runtime process it forks (/bin/sh, coreutils, python3, node, the
// goja runner) inherits. Linux/amd64 only; elsewhere Load and Supported
// report ErrNotSupported. The filter cannot be removed once loaded.
//
// # Where the rules come from
//
// policy.go is the one reviewed file. It starts from the unconditional
// x86_64 allow list of Docker's default profile (moby/profiles
// seccomp/default.json), drops what Docker gates on capabilities the sandbox
// does not hold, and blocks at least what DESIGN.md ("Isolation, in order")
// lists: the mount family, unshare/setns and clone with CLONE_NEW* flags,
// ptrace and process_vm_*, bpf, perf_event_open, userfaultfd, io_uring,
// the keyring, kexec and module loading, TIOCSTI/TIOCLINUX, and AF_VSOCK,
// AF_PACKET and raw sockets; then what sandboxes sharing one host must not
// reach: legacy AIO, inotify/dnotify, socket protocols beyond TCP and UDP.
// Unlisted syscalls fail with EPERM.
//
// # Bug classes it answers
//
//   - TIOCSTI / TIOCLINUX terminal injection (CVE-2016-7545, CVE-2017-5226,
//     CVE-2023-1523 class): ioctl requests are compared on their low 32 bits,
//     as the kernel truncates them, so 0x1_0000_5412 cannot slip past.
//   - x32 ABI bypass: x86_64 processes can call the x32 table by setting bit
//     30 of the syscall number while arch still reads AUDIT_ARCH_X86_64; such
//     numbers get ENOSYS before any lookup. A foreign arch (i386 `int 0x80`)
//     kills the process.
//   - clone3: its flags live in memory where a filter cannot read them, so it
//     gets ENOSYS and libc/Go fall back to clone, whose flags are filtered.
//   - io_uring: its work runs outside seccomp's view; ENOSYS, and libuv falls
//     back to epoll and threads.
//   - Filter-bypass through namespaces (unshare/clone NEWUSER to regain
//     capabilities over a fresh namespace, the main road to netfilter and
//     overlayfs LPEs), eBPF verifier bugs, userfaultfd-assisted races, the
//     unnamespaced keyring (CVE-2016-0728), open_by_handle_at ("shocker").
//   - Kernel code reached through a socket's protocol or family: socket is
//     allowed by family, type and protocol (TCP, UDP, unix, route netlink;
//     not MPTCP, UDP-Lite, SCTP, ping), and socketpair for AF_UNIX only,
//     since the kernel creates (and may load the module of) another
//     family's socket before it refuses the pair.
//   - Side channels through the host files every sandbox binds read-only:
//     inotify gets ENOSYS and dnotify (fcntl F_NOTIFY) EINVAL, as on a
//     kernel without them, so no watch sees another sandbox's program start.
//   - Host-wide pools without a per-sandbox bound: legacy AIO contexts
//     (io_setup & co.) all come from fs.aio-max-nr, so they get ENOSYS, as
//     on a kernel without AIO; one sandbox could otherwise make io_setup
//     fail for the whole host.
//   - New syscalls: numbers above the reviewed table get ENOSYS, not EPERM,
//     so C libraries take their fallbacks (the 2020 faccessat2 breakage).
//
// Program exposes the assembled filter so tests can run it in
// golang.org/x/net/bpf's VM without loading it.
package seccomp
