//go:build linux

package hostile

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

// holdEverything is a python program that takes as much as a sandbox may
// of what the kernel counts per user or for the whole host (inotify
// instances and watches, queued signals, AIO contexts, open files and
// sockets in as many processes as the pids limit allows), reports what it
// got, prints "holding" once it holds it all, and waits to be killed.
const holdEverything = `
import ctypes, errno, os, signal, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def err():
    e = ctypes.get_errno()
    return errno.errorcode.get(e, str(e))

# inotify instances, then watches on the first one (every directory of /usr).
inotify = []
while len(inotify) < 1 << 16:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        break
    inotify.append(fd)
print(f"inotify instances: {len(inotify)}, then {err()}", flush=True)
watches = 0
if inotify:
    for d, _, _ in os.walk("/usr"):
        if libc.inotify_add_watch(inotify[0], d.encode(), 0x20) < 0:
            break
        watches += 1
print(f"inotify watches: {watches}", flush=True)

# Queued real-time signals, to ourselves, blocked so that they stay queued.
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = 0
while queued < 1 << 20 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    queued += 1
print(f"queued signals: {queued}, then {err()}", flush=True)

# AIO contexts.
aio = 0
while aio < 1 << 17:
    ctx = ctypes.c_ulong(0)
    if libc.syscall(ctypes.c_long(206), ctypes.c_long(1), ctypes.byref(ctx)) < 0:
        break
    aio += 1
print(f"aio contexts: {aio}, then {err()}", flush=True)

# Open files in as many processes as the pids limit allows, each to its
# RLIMIT_NOFILE: /dev/null in the children, sockets here.
def fill(make):
    n = 0
    try:
        while True:
            make()
            n += 1
    except OSError as e:
        return n, errno.errorcode.get(e.errno, str(e.errno))
r, w = os.pipe()
children = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(r)
        n, _ = fill(lambda: os.open("/dev/null", os.O_RDONLY))
        os.write(w, b"%d\n" % n)
        os.close(w)
        signal.pause()
        os._exit(0)
    children += 1
os.close(w)
counts = os.fdopen(r).read().split()
files = sum(int(c) for c in counts if c.isdigit())
held = []
sockets, why = fill(lambda: held.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM)))
print(f"processes: {children}; files in them: {files}; sockets: {sockets}, then {why}", flush=True)
print("holding", flush=True)
signal.pause()
`

// TestHostRootKeepsItsKernelResources: while a sandbox holds everything
// it may of what the kernel counts per user or host-wide, host root can
// still create an inotify instance, queue signals (hostSignals), call io_setup and
// open files, and an unprivileged host process can still open files.
// Before the sandbox's user namespace was owned by its own host uid, the
// sandbox queued signals on host root's account until host root's
// sigqueue failed (EAGAIN); before AIO and inotify were denied, it took
// every AIO context of the host and all of host root's inotify instances.
func TestHostRootKeepsItsKernelResources(t *testing.T) {
	s := requireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(3*time.Minute))
	defer cancel()
	sctx, closeStream := context.WithCancel(ctx)
	defer closeStream()
	stream, err := s.client.ExecuteStream(sctx, &sandboxv1.ExecuteRequest{
		Source:  &sandboxv1.ExecuteRequest_Code{Code: holdEverything},
		Runtime: sandboxv1.Runtime_RUNTIME_PYTHON,
		Limits:  &sandboxv1.ResourceLimits{TimeoutMs: 120_000},
	})
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	// The sandbox says when it holds everything: no sleep, no polling.
	var out, errOut strings.Builder
	id := ""
	for !strings.Contains(out.String(), "holding\n") {
		ch, err := stream.Recv()
		if err != nil {
			t.Fatalf("stream ended before the sandbox held everything: %v\nstdout %q\nstderr %q%s", err, out.String(), errOut.String(), s.logTail())
		}
		if r := ch.GetResult(); r != nil {
			t.Fatalf("execution ended before it held everything: %v\nstdout %q\nstderr %q", r, out.String(), errOut.String())
		}
		id = ch.GetExecutionId()
		out.WriteString(ch.GetOutput())
		errOut.WriteString(ch.GetErrorOutput())
	}
	t.Logf("the sandbox holds:\n%s", out.String())

	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
		t.Errorf("host root: inotify_init1: %v", err)
	} else {
		unix.Close(fd)
	}
	if err := sigqueueToChild(); err != nil {
		t.Errorf("host root: %v", err)
	}
	var aioCtx uint64
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&aioCtx)), 0); e != 0 {
		t.Errorf("host root: io_setup: %v", e)
	} else if _, _, e := unix.Syscall(unix.SYS_IO_DESTROY, uintptr(aioCtx), 0, 0); e != 0 {
		t.Errorf("host root: io_destroy: %v", e)
	}
	var files []*os.File
	for range 64 {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Errorf("host root: open: %v", err)
			break
		}
		files = append(files, f)
	}
	for _, f := range files {
		f.Close()
	}
	nobody := exec.Command("/bin/sh", "-c", "exec 3</dev/null 4</etc/hostname && echo opened")
	nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	if b, err := nobody.CombinedOutput(); err != nil || string(b) != "opened\n" {
		t.Errorf("unprivileged host process: open files: %q, %v", b, err)
	}

	// Closing the stream cancels the execution.
	closeStream()
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	resp, err := s.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
	if err != nil {
		t.Fatalf("GetExecution(wait): %v", err)
	}
	if resp.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED {
		t.Errorf("after the stream closed the execution is %s; want CANCELLED", resp.GetState())
	}
	if l := s.sandboxGone(s.stateDir, resp.GetResult().GetOutcome().GetSandboxId()); len(l) > 0 {
		t.Errorf("left on the host: %v", l)
	}
}

// hostSignals is how many signals host root must still be able to queue:
// more than the few a sandbox charging host root's account would leave it
// (before the fix, a sandbox stopped within ten of host root's limit).
const hostSignals = 64

// sigqueueToChild queues hostSignals real-time signals, as sigqueue(3)
// does (rt_sigqueueinfo, si_code SI_QUEUE), to a child of host root that
// blocks them, so that they stay queued: each is charged to the
// receiver's user, host root.
func sigqueueToChild() error {
	cmd := exec.Command("/usr/bin/python3", "-c",
		`import signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN]); print("ready", flush=True); sys.stdin.read()`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start a child: %w", err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		return fmt.Errorf("child: %q, %v", ready, err)
	}
	const sigrtmin = 34
	var info [128]byte // siginfo_t: si_signo, si_errno, si_code, pad, si_pid, si_uid
	*(*int32)(unsafe.Pointer(&info[0])) = sigrtmin
	*(*int32)(unsafe.Pointer(&info[8])) = -1 // SI_QUEUE
	*(*int32)(unsafe.Pointer(&info[16])) = int32(os.Getpid())
	for i := range hostSignals {
		_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(cmd.Process.Pid), sigrtmin, uintptr(unsafe.Pointer(&info[0])))
		if e != 0 {
			return fmt.Errorf("rt_sigqueueinfo: signal %d of %d: %w", i+1, hostSignals, e)
		}
	}
	return nil
}
