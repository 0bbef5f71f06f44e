package seccomp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe is one thing the helper tries after Load. want is the result the
// filtered helper must report: "ok", an errno name or a program's output.
// Each blocked call is given arguments under which the kernel itself answers
// with another errno (or succeeds, as root), so EPERM/ENOSYS can only come
// from the filter; TestLoadControl checks that by running the probes without
// it.
type probe struct {
	name string
	want string
	run  func() string
}

// kernelAgrees names the probes the kernel may answer the same way unfiltered.
var kernelAgrees = map[string]bool{
	"x32 getpid": true, // Kernels without CONFIG_X86_X32_ABI (Debian's) answer ENOSYS too.
}

// absent marks a probe whose program is not installed; the parent skips it.
const absent = "absent"

var probes = []probe{
	// Allowed: the Go runtime, fork/exec and the sandbox's runtimes.
	{"getpid", "ok", func() string { return sysResult(unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)) }},
	{"exec /bin/true", "ok", func() string { return errString(exec.Command("/bin/true").Run()) }},
	{"sh", "hi", func() string {
		return output("/bin/sh", "-c", "echo hi; ls / >/dev/null; cat /proc/self/status >/dev/null; id >/dev/null; head -c1 /dev/zero >/dev/null; yes | head -n1 >/dev/null; sleep 0.01")
	}},
	{"python3", "1", func() string {
		return output(lookPath("/usr/bin/python3", "python3"), "-c",
			"import os,socket,threading,subprocess\n"+
				"s=socket.socket(); s.close()\n"+
				"t=threading.Thread(target=lambda: None); t.start(); t.join()\n"+
				"subprocess.run(['/bin/true'], check=True)\n"+
				"print(1)")
	}},
	{"node", "1 2", func() string {
		return output(lookPath("/usr/bin/node", "node"), "-e",
			"const cp=require('child_process'), fs=require('fs'), os=require('os');"+
				"fs.readFileSync('/proc/self/status'); os.networkInterfaces();"+
				"console.log(cp.execFileSync('/bin/echo',['1']).toString().trim());"+
				"fs.promises.stat('/').then(()=>console.log(2));")
	}},
	{"ioctl TCGETS on /dev/null", "ENOTTY", func() string { return sysResult(unix.Syscall(unix.SYS_IOCTL, 0, unix.TCGETS, 0)) }},
	{"socket AF_INET stream", "ok", func() string { return socketResult(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) }},
	{"socket AF_UNIX", "ok", func() string { return socketResult(unix.AF_UNIX, unix.SOCK_STREAM, 0) }},
	{"socket AF_NETLINK route", "ok", func() string { return socketResult(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) }},
	{"personality query", "ok", func() string { return sysResult(unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)) }},
	{"no_new_privs set", "ok", func() string {
		v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		if err != nil || v != 1 {
			return fmt.Sprintf("no_new_privs=%d err=%v", v, err)
		}
		return "ok"
	}},
	{"every thread filtered", "ok", allThreadsFiltered},

	// Blocked.
	{"mount", "EPERM", func() string {
		return sysResult(unix.Syscall6(unix.SYS_MOUNT, cstr("none"), cstr("/nonexistent-execfarm"), cstr("tmpfs"), 0, 0, 0))
	}},
	{"pivot_root", "EPERM", func() string {
		return sysResult(unix.Syscall(unix.SYS_PIVOT_ROOT, cstr("/nonexistent-a"), cstr("/nonexistent-b"), 0))
	}},
	// Without the filter: EINVAL, a multi-threaded process cannot unshare its user namespace.
	{"unshare CLONE_NEWUSER", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)) }},
	{"setns", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_SETNS, ^uintptr(0), 0, 0)) }},
	{"clone CLONE_NEWNS", "EPERM", cloneNewNS},
	// Without the filter: EFAULT or EINVAL for a NULL clone_args.
	{"clone3", "ENOSYS", func() string { return sysResult(unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)) }},
	// Without the filter: ESRCH, the parent is not our tracee.
	{"ptrace", "EPERM", func() string {
		return sysResult(unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKUSR, uintptr(os.Getppid()), 0, 0, 0, 0))
	}},
	{"process_vm_readv", "EPERM", func() string {
		return sysResult(unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(os.Getppid()), 0, 0, 0, 0, 0))
	}},
	{"bpf", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)) }},
	{"perf_event_open", "EPERM", func() string {
		return sysResult(unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0))
	}},
	{"userfaultfd", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_USERFAULTFD, 0xffffffff, 0, 0)) }},
	{"io_uring_setup", "ENOSYS", func() string { return sysResult(unix.Syscall(unix.SYS_IO_URING_SETUP, 0, 0, 0)) }},
	{"keyctl", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_KEYCTL, 0xffff, 0, 0)) }},
	{"kexec_load", "EPERM", func() string {
		return sysResult(unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0xdead0000, 0, 0))
	}},
	// fd 0 is /dev/null: without the filter, ENOTTY.
	{"ioctl TIOCSTI", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, cstr("x"))) }},
	{"ioctl TIOCSTI high bits", "EPERM", func() string {
		return sysResult(unix.Syscall(unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI, cstr("x")))
	}},
	{"ioctl TIOCLINUX", "EPERM", func() string { return sysResult(unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCLINUX, cstr("\x02"))) }},
	{"socket AF_PACKET", "EPERM", func() string { return socketResult(unix.AF_PACKET, unix.SOCK_RAW, 0x0300) }},
	{"socket AF_INET SOCK_RAW", "EPERM", func() string { return socketResult(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) }},
	{"socket AF_INET SOCK_PACKET", "EPERM", func() string { return socketResult(unix.AF_INET, unix.SOCK_PACKET, 0x0300) }},
	{"socket AF_VSOCK", "EPERM", func() string { return socketResult(unix.AF_VSOCK, unix.SOCK_STREAM, 0) }},
	{"personality READ_IMPLIES_EXEC", "EPERM", func() string {
		return sysResult(unix.Syscall(unix.SYS_PERSONALITY, 0x0400000 /* READ_IMPLIES_EXEC */, 0, 0))
	}},
	{"x32 getpid", "ENOSYS", func() string { return sysResult(unix.RawSyscall(x32SyscallBit|unix.SYS_GETPID, 0, 0, 0)) }},
}

// runHelper is the helper process: Load (unless mode is helperControl), run
// every probe, print the results as one JSON object on stdout. It is
// multi-threaded by then (the Go runtime has started its threads), which is
// what TSYNC is for.
func runHelper(mode string) int {
	if mode == helperFiltered {
		if err := Load(); err != nil {
			fmt.Fprintln(os.Stderr, "Load:", err)
			return 1
		}
	}
	results := map[string]string{}
	for _, p := range probes {
		results[p.name] = p.run()
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "encode:", err)
		return 1
	}
	return 0
}

// sysResult turns a raw syscall's result into "ok" or its errno's name.
func sysResult(_, _ uintptr, errno unix.Errno) string {
	if errno == 0 {
		return "ok"
	}
	return unix.ErrnoName(errno)
}

func socketResult(domain, typ, proto int) string {
	fd, err := unix.Socket(domain, typ, proto)
	if err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return unix.ErrnoName(errno)
		}
		return err.Error()
	}
	unix.Close(fd)
	return "ok"
}

func errString(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// output runs a program and returns its trimmed stdout, with whitespace runs
// folded to single spaces, or its error and stderr.
func output(path string, args ...string) string {
	if path == "" {
		return absent
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, stderr.String())
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

func lookPath(preferred, name string) string {
	if _, err := os.Stat(preferred); err == nil {
		return preferred
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// cstr returns a pointer to a NUL-terminated copy of s. The memory is never
// freed or moved: the helper exits right after its probes.
func cstr(s string) uintptr {
	p, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return uintptr(unsafe.Pointer(p))
}

// cloneNewNS calls clone(CLONE_NEWNS|SIGCHLD) directly. Should the filter let
// it through, the child (a fork of this process) exits at once and is reaped.
func cloneNewNS() string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWNS|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return unix.ErrnoName(errno)
	}
	if pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	unix.Wait4(int(pid), &ws, 0, nil)
	return "ok"
}

// allThreadsFiltered checks the Seccomp field of every thread's status.
func allThreadsFiltered() string {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) < 2 {
		return fmt.Sprintf("want several threads, got %d (%v)", len(tasks), err)
	}
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(string(b), "\nSeccomp:\t2\n") {
			return path + " is not in seccomp filter mode"
		}
	}
	return "ok"
}
