package namespace

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// CloneFlags are the namespaces every worker is forked into. The cgroup
// namespace is not among them: a cgroup namespace is rooted at the cgroup
// its creator is in when it is created, which is the supervisor's (clone3
// moves a CLONE_INTO_CGROUP child only after copying its namespaces, and on
// cgroup v1 the worker is placed after the fork). The worker calls
// UnshareCgroup once it is in its own cgroup.
const CloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// SysProcAttr returns the attributes with which the supervisor forks a
// worker: every namespace of CloneFlags, ids mapped to r, and SIGKILL when
// the supervisor thread that forked it dies. cgroupFD >= 0 makes the child
// be born in that cgroup (cgroup v2, clone3 CLONE_INTO_CGROUP); pass -1 on
// cgroup v1, where the worker waits on a sync pipe until it has been placed.
func SysProcAttr(r IDRange, cgroupFD int) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags:                 CloneFlags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.HostID), Size: int(r.size())}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.HostID), Size: int(r.size())}},
		GidMappingsEnableSetgroups: true,
		// Creating a user namespace does not change credentials: become
		// the namespace's root (host uid r.HostID) rather than stay host
		// root, which is unmapped (and so "nobody") inside.
		Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
		Setsid:     true,
	}
	if cgroupFD >= 0 {
		attr.UseCgroupFD = true
		attr.CgroupFD = cgroupFD
	}
	return attr
}

// UnshareCgroup moves the calling thread into a new cgroup namespace
// rooted at the process's current cgroup, so that processes it forks see
// "/" in /proc/self/cgroup and no host cgroup path (paths in
// /proc/PID/cgroup are shown relative to the reader's namespace).
// Namespaces belong to threads: call it from a goroutine locked to its
// thread (runtime.LockOSThread) that does all the forking and never
// unlocks. Needs CAP_SYS_ADMIN in the process's user namespace.
func UnshareCgroup() error {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return os.NewSyscallError("unshare CLONE_NEWCGROUP", err)
	}
	return nil
}

// SetHostname sets the UTS hostname of the calling process's namespace.
func SetHostname(name string) error {
	if err := unix.Sethostname([]byte(name)); err != nil {
		return os.NewSyscallError("sethostname", err)
	}
	return nil
}

// LoopbackUp brings up "lo" in the calling process's network namespace, so
// that programs can talk to themselves on 127.0.0.1 and nothing else.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl SIOCGIFFLAGS", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl SIOCSIFFLAGS", err)
	}
	return nil
}
