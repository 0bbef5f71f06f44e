package seccomp

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	seccompbpf "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// Expected filter results, as the kernel sees them.
const (
	actAllow   = uint32(seccompbpf.ActionAllow)
	actKill    = uint32(seccompbpf.ActionKillProcess)
	actEPERM   = uint32(seccompbpf.ActionErrno) | errnoEPERM
	actENOSYS  = uint32(seccompbpf.ActionErrno) | errnoENOSYS
	actEINVAL  = uint32(seccompbpf.ActionErrno) | errnoEINVAL
	auditArchA = 0xc00000b7 // AUDIT_ARCH_AARCH64
)

// call is one syscall as the filter sees it (struct seccomp_data).
type call struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// emulator runs Program in golang.org/x/net/bpf's VM.
type emulator struct{ vm *bpf.VM }

func newEmulator(t *testing.T) emulator {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the policy is written for x86_64")
	}
	prog, err := Program()
	if err != nil {
		t.Fatalf("Program: %v", err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	return emulator{vm: vm}
}

// run returns the filter's action for c. The VM loads 32-bit words
// big-endian, so each word is stored big-endian at the offset where the
// kernel would read it natively: that emulates x86_64 exactly for a program
// made only of 32-bit loads, as seccomp programs are.
func (e emulator) run(t *testing.T, c call) uint32 {
	t.Helper()
	var data [64]byte
	binary.BigEndian.PutUint32(data[offNr:], c.nr)
	binary.BigEndian.PutUint32(data[offArch:], c.arch)
	for i, a := range c.args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], uint32(a))       // low word first (little-endian)
		binary.BigEndian.PutUint32(data[offArgs+8*i+4:], uint32(a>>32)) // then the high word
	}
	out, err := e.vm.Run(data[:])
	if err != nil {
		t.Fatalf("run %+v: %v", c, err)
	}
	return uint32(out)
}

func nr(t *testing.T, name string) uint32 {
	t.Helper()
	n, ok := arch.X86_64.SyscallNames[name]
	if !ok {
		t.Fatalf("no x86_64 syscall %q", name)
	}
	return uint32(n)
}

func native(t *testing.T, name string, args ...uint64) call {
	c := call{arch: auditArchX86_64, nr: nr(t, name)}
	copy(c.args[:], args)
	return c
}

func actionName(a uint32) string {
	switch a {
	case actAllow:
		return "ALLOW"
	case actKill:
		return "KILL_PROCESS"
	case actEPERM:
		return "ERRNO(EPERM)"
	case actENOSYS:
		return "ERRNO(ENOSYS)"
	case actEINVAL:
		return "ERRNO(EINVAL)"
	}
	return "unexpected action"
}

func TestProgramTable(t *testing.T) {
	e := newEmulator(t)
	const (
		cloneNewns   = 0x00020000
		cloneNewuser = 0x10000000
		sigchld      = 17
		sockCloexec  = 0x80000
		sockNonblock = 0x800
		sockRaw      = 3
		sockPacket   = 10
		afPacket     = 17
		afVsock      = 40
	)
	cases := []struct {
		name string
		call call
		want uint32
	}{
		{"getpid", native(t, "getpid"), actAllow},
		{"unassigned number in table range", call{arch: auditArchX86_64, nr: 400}, actEPERM},
		{"number after reviewed table", call{arch: auditArchX86_64, nr: lastKnownSyscall + 1}, actENOSYS},
		{"x32 getpid", call{arch: auditArchX86_64, nr: x32SyscallBit | 39}, actENOSYS},
		{"x32 mount", call{arch: auditArchX86_64, nr: x32SyscallBit | 165}, actENOSYS},
		{"nr -1", call{arch: auditArchX86_64, nr: 0xffffffff}, actENOSYS},
		{"i386 getpid (int 0x80)", call{arch: auditArchI386, nr: 20}, actKill},
		{"i386 number of x86_64 getpid", call{arch: auditArchI386, nr: 39}, actKill},
		{"aarch64", call{arch: auditArchA, nr: 172}, actKill},

		{"ioctl TCGETS", native(t, "ioctl", 0, 0x5401), actAllow},
		{"ioctl TIOCGWINSZ", native(t, "ioctl", 1, 0x5413), actAllow},
		{"ioctl TIOCSTI", native(t, "ioctl", 0, ioctlTIOCSTI), actEPERM},
		{"ioctl TIOCLINUX", native(t, "ioctl", 0, ioctlTIOCLINUX), actEPERM},
		{"ioctl TIOCSTI high bits", native(t, "ioctl", 0, 0x1_0000_5412), actEPERM},
		{"ioctl TIOCSTI sign-extended", native(t, "ioctl", 0, 0xffffffff_00005412), actEPERM},
		{"ioctl TIOCLINUX high bits", native(t, "ioctl", 0, 0x8000_0000_0000_541C), actEPERM},

		{"socket unix", native(t, "socket", afUnix, sockStream|sockCloexec), actAllow},
		{"socket unix dgram", native(t, "socket", afUnix, sockDgram), actAllow},
		{"socket inet stream", native(t, "socket", afInet, sockStream|sockNonblock|sockCloexec, 6), actAllow},
		{"socket inet dgram", native(t, "socket", afInet, sockDgram|sockCloexec), actAllow},
		{"socket inet dgram udp", native(t, "socket", afInet, sockDgram, ipprotoUDP), actAllow},
		{"socket inet dgram icmp (ping)", native(t, "socket", afInet, sockDgram, 1), actEPERM},
		{"socket inet6 dgram icmpv6 (ping)", native(t, "socket", afInet6, sockDgram, 58), actEPERM},
		{"socket inet6 stream", native(t, "socket", afInet6, sockStream), actAllow},
		{"socket inet6 stream tcp", native(t, "socket", afInet6, sockStream, ipprotoTCP), actAllow},
		{"socket inet stream mptcp", native(t, "socket", afInet, sockStream, 262), actEPERM},
		{"socket inet6 stream mptcp", native(t, "socket", afInet6, sockStream|sockCloexec, 262), actEPERM},
		{"socket inet stream mptcp high bits", native(t, "socket", afInet, sockStream, 0x1_0000_0000|262), actEPERM},
		{"socket inet stream sctp", native(t, "socket", afInet, sockStream, 132), actEPERM},
		{"socket inet stream udp", native(t, "socket", afInet, sockStream, ipprotoUDP), actEPERM},
		{"socket inet dgram udplite", native(t, "socket", afInet, sockDgram, 136), actEPERM},
		{"socket inet6 dgram udplite", native(t, "socket", afInet6, sockDgram, 136), actEPERM},
		{"socket inet dgram tcp", native(t, "socket", afInet, sockDgram, ipprotoTCP), actEPERM},
		{"socket inet tcp with high bits (kernel sees TCP)", native(t, "socket", afInet, sockStream, 0x1_0000_0000|ipprotoTCP), actAllow},
		{"socketpair unix", native(t, "socketpair", afUnix, sockStream|sockCloexec), actAllow},
		{"socketpair unix dgram", native(t, "socketpair", afUnix, sockDgram), actAllow},
		{"socketpair inet", native(t, "socketpair", afInet, sockStream), actEPERM},
		{"socketpair inet sctp", native(t, "socketpair", afInet, sockStream, 132), actEPERM},
		{"socketpair vsock", native(t, "socketpair", afVsock, sockStream), actEPERM},
		{"socketpair netlink", native(t, "socketpair", afNetlink, sockRaw), actEPERM},
		{"socketpair vsock disguised with high bits", native(t, "socketpair", 0x1_0000_0000|afVsock, sockStream), actEPERM},
		{"socket inet raw", native(t, "socket", afInet, sockRaw, 1), actEPERM},
		{"socket inet raw cloexec", native(t, "socket", afInet, sockRaw|sockCloexec), actEPERM},
		{"socket inet raw high bits", native(t, "socket", afInet, 0x1_0000_0000|sockRaw), actEPERM},
		{"socket inet6 raw", native(t, "socket", afInet6, sockRaw|sockNonblock), actEPERM},
		{"socket inet packet (becomes AF_PACKET)", native(t, "socket", afInet, sockPacket), actEPERM},
		{"socket inet seqpacket", native(t, "socket", afInet, 5), actEPERM},
		{"socket netlink route", native(t, "socket", afNetlink, sockRaw|sockCloexec, netlinkRoute), actAllow},
		{"socket netlink audit", native(t, "socket", afNetlink, sockRaw, 9), actEPERM},
		{"socket netlink netfilter", native(t, "socket", afNetlink, sockRaw, 12), actEPERM},
		{"socket packet", native(t, "socket", afPacket, sockRaw, 0x0300), actEPERM},
		{"socket vsock", native(t, "socket", afVsock, sockStream), actEPERM},
		{"socket alg", native(t, "socket", 38, 5), actEPERM},
		{"socket bluetooth", native(t, "socket", 31, sockRaw), actEPERM},
		{"socket unix with high bits (kernel sees AF_UNIX)", native(t, "socket", 0x1_0000_0000|afUnix, sockStream), actAllow},
		{"socket vsock disguised with high bits", native(t, "socket", 0x1_0000_0000|afVsock, sockStream), actEPERM},

		{"clone fork", native(t, "clone", sigchld), actAllow},
		{"clone go thread", native(t, "clone", 0x50f00), actAllow},              // VM|FS|FILES|SIGHAND|SYSVSEM|THREAD
		{"clone vfork with pidfd", native(t, "clone", 0x4111|0x1000), actAllow}, // VFORK|VM|SIGCHLD|PIDFD
		{"clone glibc pthread", native(t, "clone", 0x3d0f00), actAllow},         // + SETTLS|PARENT_SETTID|CHILD_CLEARTID
		{"clone newns", native(t, "clone", cloneNewns|sigchld), actEPERM},
		{"clone newuser", native(t, "clone", cloneNewuser|sigchld), actEPERM},
		{"clone newpid", native(t, "clone", 0x20000000), actEPERM},
		{"clone newnet", native(t, "clone", 0x40000000), actEPERM},
		{"clone newipc", native(t, "clone", 0x08000000), actEPERM},
		{"clone newuts", native(t, "clone", 0x04000000), actEPERM},
		{"clone newcgroup", native(t, "clone", 0x02000000), actEPERM},
		{"clone newns high bits", native(t, "clone", 0x1_0000_0000|cloneNewns), actEPERM},
		{"clone3", native(t, "clone3"), actENOSYS},
		{"io_uring_setup", native(t, "io_uring_setup", 8, 0), actENOSYS},
		{"io_setup", native(t, "io_setup", 1, 0), actENOSYS},
		{"inotify_init1", native(t, "inotify_init1", 0), actENOSYS},
		{"inotify_add_watch", native(t, "inotify_add_watch", 3, 0, 0x20), actENOSYS},

		{"fcntl F_GETFD", native(t, "fcntl", 3, 1), actAllow},
		{"fcntl F_SETFL", native(t, "fcntl", 3, 4, 0x800), actAllow},
		{"fcntl F_SETLK", native(t, "fcntl", 3, 6, 0), actAllow},
		{"fcntl F_NOTIFY", native(t, "fcntl", 3, fcntlFNotify, 0x80000001), actEINVAL},
		{"fcntl F_NOTIFY high bits", native(t, "fcntl", 3, 0x1_0000_0000|fcntlFNotify, 1), actEINVAL},
		{"io_submit", native(t, "io_submit"), actENOSYS},

		{"personality linux", native(t, "personality", 0), actAllow},
		{"personality linux32", native(t, "personality", 8), actAllow},
		{"personality uname26", native(t, "personality", 0x20000), actAllow},
		{"personality query", native(t, "personality", 0xffffffff), actAllow},
		{"personality READ_IMPLIES_EXEC", native(t, "personality", 0x0400000), actEPERM},
		{"personality ADDR_NO_RANDOMIZE", native(t, "personality", 0x0040000), actEPERM},
		{"personality 0 with high bits", native(t, "personality", 0x1_0000_0000), actEPERM},

		{"mount", native(t, "mount"), actEPERM},
		{"unshare", native(t, "unshare", cloneNewuser), actEPERM},
		{"ptrace", native(t, "ptrace"), actEPERM},
		{"bpf", native(t, "bpf"), actEPERM},
		{"kexec_load", native(t, "kexec_load"), actEPERM},
		{"memfd_secret (left out)", native(t, "memfd_secret"), actEPERM},
		{"fanotify_mark (left out)", native(t, "fanotify_mark"), actEPERM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.run(t, tc.call); got != tc.want {
				t.Errorf("action = %#x %s, want %#x %s", got, actionName(got), tc.want, actionName(tc.want))
			}
		})
	}
}

// TestProgramLists runs every listed syscall through the emulator.
func TestProgramLists(t *testing.T) {
	e := newEmulator(t)
	lists := []struct {
		name  string
		names []string
		want  uint32
	}{
		{"allowed", allowedSyscalls, actAllow},
		{"denied", deniedSyscalls, actEPERM},
		{"enosys", enosysSyscalls, actENOSYS},
	}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			for _, name := range l.names {
				// Arguments that pass every conditional filter, so the list
				// decides: a TIOCSTI-free ioctl would also be fine here.
				if got := e.run(t, native(t, name)); got != l.want {
					t.Errorf("%s: action = %s, want %s", name, actionName(got), actionName(l.want))
				}
			}
		})
	}
}

// TestPolicyLists checks the lists themselves: sorted, no duplicates, no name
// in two lists, every name known, and everything DESIGN.md requires blocked
// is blocked.
func TestPolicyLists(t *testing.T) {
	lists := map[string][]string{"allowed": allowedSyscalls, "denied": deniedSyscalls, "enosys": enosysSyscalls}
	seen := map[string]string{}
	for listName, names := range lists {
		if !slices.IsSorted(names) {
			t.Errorf("%s list is not sorted", listName)
		}
		for _, n := range names {
			if other, dup := seen[n]; dup {
				t.Errorf("%s is in the %s and %s lists", n, other, listName)
			}
			seen[n] = listName
			if _, ok := arch.X86_64.SyscallNames[n]; !ok {
				t.Errorf("%s list: unknown x86_64 syscall %q", listName, n)
			}
		}
	}
	for _, n := range []string{"ioctl", "socket", "socketpair", "fcntl", "clone", "personality"} {
		if l, ok := seen[n]; ok {
			t.Errorf("%s is filtered on its arguments but also in the %s list", n, l)
		}
	}

	mustBlock := []string{
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
		"fsconfig", "fspick", "mount_setattr", "unshare", "setns", "clone3", "ptrace",
		"process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key",
		"request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module",
		"delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
		"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "syslog", "iopl",
		"ioperm", "vhangup", "settimeofday", "clock_settime", "adjtimex", "chroot",
		"nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "create_module",
		"get_kernel_syms", "query_module", "fanotify_init", "pidfd_getfd", "kcmp",
		"move_pages", "mbind", "set_mempolicy",
		// Watches on the host files every sandbox shares.
		"inotify_init", "inotify_init1", "inotify_add_watch",
		// Host-wide pools with no per-sandbox bound (fs.aio-max-nr).
		"io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy",
	}
	for _, n := range mustBlock {
		if l := seen[n]; l != "denied" && l != "enosys" {
			t.Errorf("%s must be blocked, is in list %q", n, l)
		}
	}
}

// TestLastKnownSyscall fails when go-seccomp-bpf learns syscalls this policy
// was not reviewed against: review them, then raise lastKnownSyscall.
func TestLastKnownSyscall(t *testing.T) {
	highest := 0
	for n := range arch.X86_64.SyscallNumbers {
		highest = max(highest, n)
	}
	if highest != lastKnownSyscall {
		t.Errorf("x86_64 syscall table ends at %d (%s), policy reviewed up to %d",
			highest, arch.X86_64.SyscallNumbers[highest], lastKnownSyscall)
	}
}

func TestProgramAssembles(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the policy is written for x86_64")
	}
	prog, err := Program()
	if err != nil {
		t.Fatalf("Program: %v", err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatalf("bpf.Assemble: %v", err)
	}
	if len(raw) == 0 || len(raw) > maxInstructions {
		t.Fatalf("program has %d instructions, want 1..%d", len(raw), maxInstructions)
	}
	if _, ok := prog[len(prog)-1].(bpf.RetConstant); !ok {
		t.Errorf("program ends with %T, want a return", prog[len(prog)-1])
	}
}
