package sysvipc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperShmBytes is the /dev/shm size whose limits TestApply writes.
const helperShmBytes = 1 << 20

// startHelper starts the test binary as a process in a new user namespace
// (root mapped to host uid rootID, 300000 as a sandbox's is to its own
// range) and a new IPC namespace, waiting on its stdin; it returns the
// process, its stdin, a pidfd and where its output goes.
func startHelper(t *testing.T, rootID int) (*exec.Cmd, io.WriteCloser, int, *bytes.Buffer) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{helperEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWIPC,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: rootID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: rootID, Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper in new user and ipc namespaces: %v", err)
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("pidfd_open: %v", err)
	}
	t.Cleanup(func() {
		unix.Close(pidfd)
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, pidfd, &out
}

// TestApply: Apply bounds the IPC namespace of a process whose user
// namespace's root is not host root (a sandbox's), as that process sees
// it: its sysctls read back the limits of a 1 MiB /dev/shm, a segment over
// 1 MiB is EINVAL, 256 KiB segments stop at the fifth (ENOSPC) though
// none is attached, the fifth message queue is ENOSPC, a message over
// 4 KiB and a set of 33 semaphores are EINVAL. With the kernel's defaults
// every one of them is accepted. The host's own limits are untouched.
// The files are written by their owner: on this kernel the namespace's
// root, 300000 (a sandbox's, from Linux 6.9), or host root when the
// namespace's root is host uid 0 (the owner of every namespace's files
// before 6.9).
func TestApply(t *testing.T) {
	for _, rootID := range []int{300000, 0} {
		t.Run(fmt.Sprintf("root=%d", rootID), func(t *testing.T) { testApply(t, rootID) })
	}
}

func testApply(t *testing.T, rootID int) {
	cmd, stdin, pidfd, out := startHelper(t, rootID)
	before, err := os.ReadFile("/proc/sys/kernel/shmmax")
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(pidfd, LimitsFor(helperShmBytes, int64(unix.Getpagesize()))); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v; it said:\n%s", err, out)
	}
	want := fmt.Sprintf(`kernel/shmmax %d
kernel/shmall %d
kernel/shmmni 128
kernel/msgmni 4
kernel/msgmnb 4096
kernel/msgmax 4096
kernel/sem 32	1024	32	128
segment over shmmax: invalid argument
256 KiB segments: 4, then no space left on device
message queues: 4, then no space left on device
message over msgmax: invalid argument
set of 33 semaphores: invalid argument
`, helperShmBytes, helperShmBytes/unix.Getpagesize())
	if out.String() != want {
		t.Errorf("in the namespace:\n%s\nwant:\n%s", out, want)
	}
	after, err := os.ReadFile("/proc/sys/kernel/shmmax")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the host's kernel.shmmax went from %q to %q", before, after)
	}
}

// TestApplyFailsForAGoneProcess: a namespace that cannot be entered is an
// error, not a silent success.
func TestApplyFailsForAGoneProcess(t *testing.T) {
	cmd, stdin, pidfd, _ := startHelper(t, 300000)
	stdin.Close()
	cmd.Wait()
	err := Apply(pidfd, LimitsFor(helperShmBytes, 4096))
	if !errors.Is(err, unix.ESRCH) {
		t.Fatalf("Apply into an exited process: %v, want ESRCH", err)
	}
}

// runHelper waits for its stdin to close, then reports its IPC
// namespace's limits and what they allow.
func runHelper() int {
	io.Copy(io.Discard, os.Stdin)
	for _, s := range LimitsFor(helperShmBytes, int64(unix.Getpagesize())).sysctls() {
		b, err := os.ReadFile("/proc/sys/kernel/" + s.name)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("kernel/"+s.name, strings.TrimSpace(string(b)))
	}
	_, err := unix.SysvShmGet(unix.IPC_PRIVATE, helperShmBytes+4096, unix.IPC_CREAT|0o600)
	fmt.Println("segment over shmmax:", errText(err))
	n := 0
	for ; n < 64; n++ {
		if _, err = unix.SysvShmGet(unix.IPC_PRIVATE, 256<<10, unix.IPC_CREAT|0o600); err != nil {
			break
		}
	}
	fmt.Printf("256 KiB segments: %d, then %s\n", n, errText(err))
	var q uintptr
	for n = 0; n < 64; n++ {
		id, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
		if e != 0 {
			err = e
			break
		}
		q = id
	}
	fmt.Printf("message queues: %d, then %s\n", n, errText(err))
	msg := make([]byte, 8+4097)
	msg[0] = 1 // mtype
	_, _, e := unix.Syscall6(unix.SYS_MSGSND, q, uintptr(unsafe.Pointer(&msg[0])), 4097, unix.IPC_NOWAIT, 0, 0)
	fmt.Println("message over msgmax:", errText(errnoErr(e)))
	_, _, e = unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 33, unix.IPC_CREAT|0o600)
	fmt.Println("set of 33 semaphores:", errText(errnoErr(e)))
	return 0
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func errText(err error) string {
	if err == nil {
		return "ACCEPTED"
	}
	return err.Error()
}
