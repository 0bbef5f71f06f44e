package seccomp

// This is the one reviewed file that says what sandboxed code may call. A
// change here changes the sandbox's attack surface: keep every non-obvious
// entry commented, keep the lists sorted, and extend policy_test.go with it.
//
// The baseline is the unconditional x86_64 allow list of Docker's default
// profile (moby/profiles seccomp/default.json); the deviations are marked
// "Docker:" below. Entries Docker gates on a capability are not allowed: the
// sandbox's runtime processes hold no capabilities, so those calls could only
// fail or, worse, succeed for the worker.
//
// Evaluation order of the assembled program (see Program):
//
//  1. arch != AUDIT_ARCH_X86_64            -> KILL_PROCESS        (header)
//  2. nr >= x32SyscallBit (x32 ABI, junk)  -> ERRNO(ENOSYS)       (header)
//  3. nr > lastKnownSyscall (newer kernel) -> ERRNO(ENOSYS)       (header)
//  4. ioctl, socket, socketpair, fcntl     -> argument filters    (argumentFilters)
//  5. deniedSyscalls                       -> ERRNO(EPERM)
//  6. enosysSyscalls                       -> ERRNO(ENOSYS)
//  7. allowedSyscalls, clone and personality with argument conditions -> ALLOW
//  8. anything else                        -> ERRNO(EPERM)

import (
	"fmt"

	seccompbpf "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
)

// Linux x86_64 ABI values, spelled out so that this file compiles and reads
// the same on every GOOS (golang.org/x/sys/unix has them only on Linux, and
// with other values on other systems).
const (
	auditArchX86_64 = 0xc000003e // AUDIT_ARCH_X86_64, include/uapi/linux/audit.h
	auditArchI386   = 0x40000003 // AUDIT_ARCH_I386: `int 0x80` from a 64-bit process

	// x32SyscallBit is __X32_SYSCALL_BIT. An x86_64 process may call the x32
	// ABI by setting it; the arch field still says x86_64, so a filter that
	// only checks arch and compares syscall numbers can be bypassed
	// (the "x32 bypass" class; libseccomp and runc guard it the same way).
	x32SyscallBit = 0x40000000

	// lastKnownSyscall is the highest x86_64 syscall number this policy was
	// reviewed against (open_tree_attr, Linux 6.15). Anything above it is a
	// syscall the reviewer has not seen: it gets ENOSYS, not EPERM, so that C
	// libraries probing a new call fall back to the old one, as they do on an
	// older kernel. (runc does the same; glibc's faccessat2 fallback broke
	// under Docker's EPERM in 2020, moby#42680.) policy_test.go checks it
	// against the syscall table of go-seccomp-bpf.
	lastKnownSyscall = 467

	errnoEPERM  = 1  // EPERM
	errnoEINVAL = 22 // EINVAL
	errnoENOSYS = 38 // ENOSYS

	sysIoctl  = 16 // ioctl on x86_64
	sysSocket = 41 // socket on x86_64
	sysFcntl  = 72 // fcntl on x86_64

	// fcntlFNotify is F_NOTIFY (F_LINUX_SPECIFIC_BASE + 2): dnotify, a
	// directory watch that signals accesses to the files in it.
	fcntlFNotify = 1026

	// TIOCSTI pushes bytes into a terminal's input queue: a sandboxed process
	// sharing a tty with a shell outside can type commands into it
	// (CVE-2016-7545 and its many siblings; Linux 6.2 made it optional with
	// CONFIG_LEGACY_TIOCSTI). TIOCLINUX (subcode 2, set selection + paste)
	// does the same on a virtual console (CVE-2023-1523 class).
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C

	sysSocketpair = 53 // socketpair on x86_64

	afUnix    = 1  // AF_UNIX
	afInet    = 2  // AF_INET
	afInet6   = 10 // AF_INET6
	afNetlink = 16 // AF_NETLINK

	sockTypeMask = 0xf // SOCK_TYPE_MASK: strips SOCK_NONBLOCK|SOCK_CLOEXEC
	sockStream   = 1   // SOCK_STREAM
	sockDgram    = 2   // SOCK_DGRAM

	ipprotoDefault = 0  // the family's default protocol for the type
	ipprotoTCP     = 6  // IPPROTO_TCP
	ipprotoUDP     = 17 // IPPROTO_UDP

	netlinkRoute = 0 // NETLINK_ROUTE

	// cloneNamespaceFlags are the CLONE_NEW* bits clone(2) accepts in its
	// flags argument: NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET.
	// Docker's value (2114060288). CLONE_NEWTIME exists only for clone3, and
	// 0x80 in clone's flags is part of the exit signal.
	cloneNamespaceFlags = 0x7E020000
)

// argumentFilters is the part of the policy that go-seccomp-bpf cannot
// express: its conditions compare all 64 bits of an argument, while ioctl's
// request and socket's domain/type/protocol are C ints the kernel truncates
// to 32 bits, and socket's type carries flags that must be masked off.
// Comparing only the low word here is what the kernel does, so a request of
// 0x1_0000_5412 is TIOCSTI for both.
//
// The accumulator holds the syscall number on entry. Every block ends in a
// return, so a syscall other than ioctl, socket, socketpair and fcntl falls
// through unchanged.
func argumentFilters() ([]bpf.Instruction, error) {
	allow := ret(seccompbpf.ActionAllow)
	deny := retErrno(errnoEPERM)

	ioctl := concat(
		ldArgLow(1),
		ifEqual(ioctlTIOCSTI, deny),
		ifEqual(ioctlTIOCLINUX, deny),
		allow,
	)

	// socket(AF_INET[6], type, protocol): TCP and UDP only, by type and
	// protocol. SOCK_RAW needs CAP_NET_RAW and is the usual way into
	// packet-parsing kernel bugs; SOCK_PACKET with AF_INET is silently
	// turned into an AF_PACKET socket by the kernel (net/socket.c), so an
	// allow-list of types is required. The protocol picks the code that
	// runs: SOCK_STREAM with IPPROTO_MPTCP or IPPROTO_SCTP, SOCK_DGRAM with
	// IPPROTO_UDPLITE or IPPROTO_ICMP (ping) are other protocols (some
	// loaded as modules on first use) that no runtime needs, so the
	// protocol must be the type's default (0) or TCP, respectively UDP.
	protocol := func(p uint32) []bpf.Instruction {
		return concat(ldArgLow(2), ifEqual(ipprotoDefault, allow), ifEqual(p, allow), deny)
	}
	inetType := concat(
		ldArgLow(1),
		[]bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask}},
		ifEqual(sockStream, protocol(ipprotoTCP)),
		ifEqual(sockDgram, protocol(ipprotoUDP)),
		deny,
	)
	socket := concat(
		ldArgLow(0),
		// AF_UNIX: the go-plugin transport, nscd, and local IPC.
		ifEqual(afUnix, allow),
		// AF_INET/AF_INET6: the Kubernetes and Prometheus forwarders listen
		// on loopback in the sandbox's network namespace.
		ifEqual(afInet, inetType),
		ifEqual(afInet6, inetType),
		// AF_NETLINK, NETLINK_ROUTE only: glibc's getaddrinfo (AI_ADDRCONFIG)
		// and getifaddrs (node's os.networkInterfaces) read addresses with
		// it; in the sandbox's empty network namespace there is nothing to
		// see, and changing anything needs CAP_NET_ADMIN. Other netlink
		// families (audit, netfilter, uevent, sock_diag) stay denied.
		ifEqual(afNetlink, concat(ldArgLow(2), ifEqual(netlinkRoute, allow), deny)),
		// Everything else, AF_PACKET and AF_VSOCK (host-guest sockets, the
		// CVE-2021-26708 class) included.
		deny,
	)

	// socketpair: AF_UNIX only. The kernel creates the family's socket
	// before it finds that the family has no pairs (EOPNOTSUPP), so any
	// other family would reach socket creation, module loading included
	// (AF_VSOCK, SCTP), around the filter above.
	socketpair := concat(ldArgLow(0), ifEqual(afUnix, allow), deny)

	// fcntl(F_NOTIFY): dnotify, the older file-change notification (see
	// inotify in enosysSyscalls). EINVAL is what a kernel without dnotify
	// answers; every other command is allowed.
	fcntl := concat(ldArgLow(1), ifEqual(fcntlFNotify, retErrno(errnoEINVAL)), allow)

	prog := concat(ifEqual(sysIoctl, ioctl), ifEqual(sysSocket, socket), ifEqual(sysSocketpair, socketpair), ifEqual(sysFcntl, fcntl))
	// Every jump above skips forward inside prog, so a prog shorter than a
	// conditional jump's 8-bit reach cannot have had a skip truncated.
	if len(prog) > maxShortJump {
		return nil, fmt.Errorf("%w: argument filters are %d instructions, more than a conditional jump reaches", ErrPolicy, len(prog))
	}
	return prog, nil
}

// header checks what every syscall must pass before its number is looked up.
// The accumulator holds the syscall number when it ends.
func header() []bpf.Instruction {
	return concat(
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArch, Size: 4}},
		// A foreign arch means i386 `int 0x80` (or a binary for another ABI):
		// its syscall numbers name other calls, so nothing below applies.
		// Nothing in the sandbox's runtimes does this; kill rather than
		// answer, so an attempt is loud (the parent sees it die of SIGSYS).
		[]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX86_64, SkipTrue: 1}},
		ret(seccompbpf.ActionKillProcess),
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}},
		// x32 ABI (and any number with bit 30 or 31 set): ENOSYS, the
		// kernel's own answer when x32 is compiled out, as Debian does.
		[]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1}},
		retErrno(errnoENOSYS),
		// Syscalls newer than this review: ENOSYS (see lastKnownSyscall).
		[]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: lastKnownSyscall, SkipFalse: 1}},
		retErrno(errnoENOSYS),
	)
}

// deniedSyscalls return EPERM. The default action denies them too; listing
// them first keeps them denied even if one is later added to the allow list
// by mistake, and names what DESIGN.md requires blocked.
var deniedSyscalls = []string{
	"_sysctl",
	"acct",
	"add_key",
	"adjtimex",      // Docker: allowed (read-only without CAP_SYS_TIME); not needed, blocked with the clock setters.
	"bpf",           // eBPF verifier bugs are a recurring root cause of container escapes.
	"chroot",        // With open fds it is an escape tool; nothing in a runtime needs it.
	"clock_adjtime", // Docker: allowed like adjtimex; blocked for the same reason.
	"clock_settime",
	"create_module",
	"delete_module",
	"fanotify_init",
	"finit_module",
	"fsconfig",
	"fsmount",
	"fsopen",
	"fspick",
	"get_kernel_syms",
	"get_mempolicy", // NUMA policy calls: Docker gates them on CAP_SYS_NICE.
	"init_module",
	"ioperm",
	"iopl",
	"kcmp",
	"kexec_file_load",
	"kexec_load",
	"keyctl", // The kernel keyring is not namespaced (CVE-2016-0728 class).
	"lookup_dcookie",
	"mbind",
	"migrate_pages",
	"modify_ldt", // Docker: allowed on x86; only 16-bit/Wine code needs it, and LDT handling has had several CVEs (CVE-2015-5157, CVE-2017-17053).
	"mount",
	"mount_setattr",
	"move_mount",
	"move_pages",
	"name_to_handle_at", // Docker: allowed; with open_by_handle_at it opens files by handle around the mount tree (the "shocker" escape).
	"nfsservctl",
	"open_by_handle_at",
	"open_tree",
	"open_tree_attr",
	"perf_event_open",
	"pidfd_getfd", // Steals another process's fds; Docker gates it on CAP_SYS_PTRACE.
	"pivot_root",
	"process_madvise",
	"process_vm_readv",
	"process_vm_writev",
	"ptrace", // Docker allows it on kernels >= 4.8; the sandbox has no use for debuggers and shares uids between runtimes.
	"query_module",
	"quotactl",
	"quotactl_fd",
	"reboot",
	"request_key",
	"set_mempolicy",
	"set_mempolicy_home_node",
	"setdomainname",
	"sethostname",
	"setns",
	"settimeofday",
	"swapoff",
	"swapon",
	"sysfs",
	"syslog",
	"umount2",
	"unshare",
	"uselib",
	"userfaultfd", // Lets a process stall the kernel mid-copy: the standard tool to win kernel races.
	"ustat",
	"vhangup",
	// The vm86/vm86old family exists only in the i386 table: the arch check
	// already kills a process that tries `int 0x80`.
}

// enosysSyscalls return ENOSYS, "not implemented here", because callers
// probe them and fall back only on ENOSYS.
var enosysSyscalls = []string{
	// clone3 takes its flags in a struct in memory, which a seccomp filter
	// cannot read, so CLONE_NEW* cannot be filtered out of it. glibc (>= 2.34
	// posix_spawn, pthread_create) and Go's os.StartProcess try clone3 first
	// and fall back to clone on ENOSYS; the kernel's own answer when clone3
	// does not exist. Docker does the same.
	"clone3",
	// File-change notification. Every sandbox binds the same host files
	// read-only (/usr, the goja binary, /etc/ld.so.cache), and a watch is
	// on the inode, so a watch there would see other sandboxes open and
	// run their programs: a side channel between sandboxes (dnotify, its
	// older form, is fcntl F_NOTIFY: see argumentFilters). No runtime
	// needs it: node's permission model refuses fs.watch outside the
	// bundle anyway, and Docker allows it only because containers do not
	// share their root. ENOSYS is what a kernel without inotify answers,
	// and what libraries with a polling fallback fall back on. It also
	// keeps a sandbox off the per-user inotify counters.
	"inotify_add_watch",
	"inotify_init",
	"inotify_init1",
	"inotify_rm_watch",
	// Legacy Linux AIO: every context comes from fs.aio-max-nr, a pool
	// shared by the whole host with no per-user, per-namespace or
	// per-cgroup bound, so one sandbox could take all of it and make
	// io_setup fail (EAGAIN) for the host until it ends. Docker allows it.
	// ENOSYS is what a kernel built without AIO answers: libaio users take
	// it as "no kernel AIO"; glibc's POSIX aio_* uses threads, and
	// neither libuv, python nor the Go runtime calls it.
	"io_cancel",
	"io_destroy",
	"io_getevents",
	"io_pgetevents",
	"io_setup",
	"io_submit",
	// io_uring runs syscalls from kernel threads that seccomp never sees, and
	// has been the largest source of kernel LPEs since 2021 (Google disabled
	// it on ChromeOS, Android and its servers for this reason). libuv (node)
	// and others probe io_uring_setup and fall back to epoll/threads.
	"io_uring_enter",
	"io_uring_register",
	"io_uring_setup",
}

// allowedSyscalls is Docker's unconditional x86_64 allow list minus the
// entries in deniedSyscalls, minus i386/32-bit-only names (the *32, *64 and
// *_time64 forms, socketcall, ipc, which do not exist on x86_64), plus a few
// calls newer than the profile revision reviewed, marked "Added:".
var allowedSyscalls = []string{
	"accept",
	"accept4",
	"access",
	"alarm",
	"arch_prctl", // x86_64 only: glibc and the Go runtime set the TLS base (ARCH_SET_FS) with it at start.
	"bind",
	"brk",
	"capget",
	"capset", // Can only lower capabilities without CAP_SETPCAP; used by sudo-like drops.
	"chdir",
	"chmod",
	"chown",
	"clock_getres",
	"clock_gettime",
	"clock_nanosleep",
	"close",
	"close_range",
	"connect",
	"copy_file_range",
	"creat",
	"dup",
	"dup2",
	"dup3",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_ctl_old",
	"epoll_pwait",
	"epoll_pwait2",
	"epoll_wait",
	"epoll_wait_old",
	"eventfd",
	"eventfd2",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"faccessat",
	"faccessat2", // glibc >= 2.33 access(); it falls back only on ENOSYS, never on EPERM.
	"fadvise64",
	"fallocate",
	// Docker: fanotify_mark is allowed; useless without fanotify_init, left out.
	"fchdir",
	"fchmod",
	"fchmodat",
	"fchmodat2", // Added: Linux 6.6; glibc >= 2.39 lchmod/fchmodat(AT_SYMLINK_NOFOLLOW) and it falls back only on ENOSYS.
	"fchown",
	"fchownat",
	// fcntl: F_NOTIFY is filtered in argumentFilters.
	"fdatasync",
	"fgetxattr",
	"flistxattr",
	"flock",
	"fork",
	"fremovexattr",
	"fsetxattr",
	"fstat",
	"fstatfs",
	"fsync",
	"ftruncate",
	"futex",
	"futex_requeue", // Added: futex2 calls, Linux 6.7; same power as futex.
	"futex_wait",    // Added with futex_requeue.
	"futex_waitv",
	"futex_wake", // Added with futex_requeue.
	"futimesat",
	"get_robust_list",
	"get_thread_area",
	"getcpu",
	"getcwd",
	"getdents",
	"getdents64",
	"getegid",
	"geteuid",
	"getgid",
	"getgroups",
	"getitimer",
	"getpeername",
	"getpgid",
	"getpgrp",
	"getpid",
	"getppid",
	"getpriority",
	"getrandom",
	"getresgid",
	"getresuid",
	"getrlimit",
	"getrusage",
	"getsid",
	"getsockname",
	"getsockopt",
	"gettid",
	"gettimeofday",
	"getuid",
	"getxattr",
	// inotify_*: ENOSYS, see enosysSyscalls.
	// io_setup & co.: ENOSYS, see enosysSyscalls.
	// ioctl: filtered on its request in argumentFilters.
	"ioprio_get",
	"ioprio_set",
	"kill",
	"landlock_add_rule", // Landlock can only restrict the caller further.
	"landlock_create_ruleset",
	"landlock_restrict_self",
	"lchown",
	"lgetxattr",
	"link",
	"linkat",
	"listen",
	"listxattr",
	"llistxattr",
	"lremovexattr",
	"lseek",
	"lsetxattr",
	"lstat",
	"madvise",
	"map_shadow_stack", // Added: Linux 6.6; glibc >= 2.39 with CET shadow stacks.
	"membarrier",       // V8 and other JITs flush instruction caches across threads with it.
	"memfd_create",
	// Docker: memfd_secret is allowed; needs secretmem=on and nothing here uses it, left out.
	"mincore",
	"mkdir",
	"mkdirat",
	"mknod", // Device nodes need CAP_MKNOD; FIFOs and sockets are fine.
	"mknodat",
	"mlock", // mlock family: bounded by RLIMIT_MEMLOCK.
	"mlock2",
	"mlockall",
	"mmap",
	"mprotect",
	"mq_getsetattr", // POSIX message queues: the sandbox has its own IPC namespace.
	"mq_notify",
	"mq_open",
	"mq_timedreceive",
	"mq_timedsend",
	"mq_unlink",
	"mremap",
	"mseal", // Added: Linux 6.10; makes the caller's own mappings immutable, glibc may seal at start.
	"msgctl",
	"msgget",
	"msgrcv",
	"msgsnd",
	"msync",
	"munlock",
	"munlockall",
	"munmap",
	"nanosleep",
	"newfstatat",
	"open",
	"openat",
	"openat2",
	"pause",
	"pidfd_open", // Go's os.Process waits on pidfds since Go 1.23.
	"pidfd_send_signal",
	"pipe",
	"pipe2",
	"pkey_alloc",
	"pkey_free",
	"pkey_mprotect",
	"poll",
	"ppoll",
	"prctl", // The dangerous options (PR_SET_MM, ambient caps) need capabilities the sandbox lacks.
	"pread64",
	"preadv",
	"preadv2",
	"prlimit64", // Raising a hard limit needs CAP_SYS_RESOURCE; Go raises RLIMIT_NOFILE's soft limit at start.
	"process_mrelease",
	"pselect6",
	"pwrite64",
	"pwritev",
	"pwritev2",
	"read",
	"readahead",
	"readlink",
	"readlinkat",
	"readv",
	"recvfrom",
	"recvmmsg",
	"recvmsg",
	"remap_file_pages",
	"removexattr",
	"rename",
	"renameat",
	"renameat2",
	"restart_syscall",
	"rmdir",
	"rseq", // glibc >= 2.35 registers restartable sequences for every thread.
	"rt_sigaction",
	"rt_sigpending",
	"rt_sigprocmask",
	"rt_sigqueueinfo",
	"rt_sigreturn",
	"rt_sigsuspend",
	"rt_sigtimedwait",
	"rt_tgsigqueueinfo",
	"sched_get_priority_max",
	"sched_get_priority_min",
	"sched_getaffinity",
	"sched_getattr",
	"sched_getparam",
	"sched_getscheduler",
	"sched_rr_get_interval",
	"sched_setaffinity",
	"sched_setattr", // Real-time policies need CAP_SYS_NICE or RLIMIT_RTPRIO (0 in the sandbox).
	"sched_setparam",
	"sched_setscheduler",
	"sched_yield",
	"seccomp", // A filter can only add restrictions; runtimes that sandbox themselves need it.
	"select",
	"semctl",
	"semget",
	"semop",
	"semtimedop",
	"sendfile",
	"sendmmsg",
	"sendmsg",
	"sendto",
	"set_robust_list",
	"set_thread_area",
	"set_tid_address",
	"setfsgid",
	"setfsuid",
	"setgid", // The set*id family needs CAP_SETUID/CAP_SETGID to change anything.
	"setgroups",
	"setitimer",
	"setpgid",
	"setpriority",
	"setregid",
	"setresgid",
	"setresuid",
	"setreuid",
	"setrlimit",
	"setsid",
	"setsockopt",
	"setuid",
	"setxattr",
	"shmat",
	"shmctl",
	"shmdt",
	"shmget",
	"shutdown",
	"sigaltstack",
	"signalfd",
	"signalfd4",
	// socket, socketpair: filtered on domain/type/protocol in argumentFilters.
	"splice",
	"stat",
	"statfs",
	"statx",
	"symlink",
	"symlinkat",
	"sync",
	"sync_file_range",
	"syncfs",
	"sysinfo",
	"tee",
	"tgkill",
	"time",
	"timer_create",
	"timer_delete",
	"timer_getoverrun",
	"timer_gettime",
	"timer_settime",
	"timerfd_create",
	"timerfd_gettime",
	"timerfd_settime",
	"times",
	"tkill",
	"truncate",
	"umask",
	"uname",
	"unlink",
	"unlinkat",
	"utime",
	"utimensat",
	"utimes",
	"vfork",
	"vmsplice",
	"wait4",
	"waitid",
	"write",
	"writev",
}

// allowedPersonalities are the personality(2) arguments Docker allows:
// PER_LINUX, PER_LINUX32 (0x8), UNAME26 (0x20000), UNAME26|PER_LINUX32 and
// 0xffffffff (query only). Everything else, READ_IMPLIES_EXEC and
// ADDR_NO_RANDOMIZE (ASLR off, which helps exploits) included, is EPERM.
var allowedPersonalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// conditionalSyscalls are allowed only when their argument conditions hold;
// go-seccomp-bpf compares all 64 bits, which is right for clone (flags is an
// unsigned long) and errs on the side of denial for personality.
func conditionalSyscalls() []seccompbpf.NameWithConditions {
	out := []seccompbpf.NameWithConditions{{
		// clone: threads and fork/vfork, but no new namespaces. Go's runtime
		// (newosproc), its syscall.forkExec (CLONE_VFORK|CLONE_VM, with
		// CLONE_PIDFD) and glibc's fork/pthread_create all pass this.
		Name: "clone",
		Conditions: seccompbpf.ArgumentConditions{{
			Argument: 0, Operation: seccompbpf.BitsNotSet, Value: cloneNamespaceFlags,
		}},
	}}
	for _, p := range allowedPersonalities {
		out = append(out, seccompbpf.NameWithConditions{
			Name: "personality",
			Conditions: seccompbpf.ArgumentConditions{{
				Argument: 0, Operation: seccompbpf.Equal, Value: p,
			}},
		})
	}
	return out
}

// policy is the part of the program go-seccomp-bpf assembles.
func policy() *seccompbpf.Policy {
	return &seccompbpf.Policy{
		DefaultAction: seccompbpf.ActionErrno, // EPERM
		Syscalls: []seccompbpf.SyscallGroup{
			{Names: deniedSyscalls, Action: seccompbpf.ActionErrno | errnoEPERM},
			{Names: enosysSyscalls, Action: seccompbpf.ActionErrno | errnoENOSYS},
			{Names: allowedSyscalls, NamesWithCondtions: conditionalSyscalls(), Action: seccompbpf.ActionAllow},
		},
	}
}
