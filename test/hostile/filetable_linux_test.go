//go:build linux

package hostile

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/test/testbin"
)

// holdFiles is a python program that holds open files in seven
// processes, each without keeping a descriptor (a file mapped, then
// closed, stays open), until something stops it; each process prints
// "held 5000 files" once it has, and why it stopped if it stops alive.
const holdFiles = `
import ctypes, errno, os, resource

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
print(f"descriptors: at most {resource.getrlimit(resource.RLIMIT_NOFILE)[1]} per process", flush=True)
PROT_READ, MAP_PRIVATE, FAILED = 1, 2, ctypes.c_void_p(-1).value

def hold():
    path, op, close, mmap = "/usr/bin/python3", os.open, os.close, libc.mmap
    held = 0
    while True:
        try:
            fd = op(path, os.O_RDONLY)
        except OSError as e:
            return held, f"open: {errno.errorcode.get(e.errno, e.errno)}"
        if mmap(None, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == FAILED:
            return held, f"mmap: {errno.errorcode.get(ctypes.get_errno())}"
        close(fd)
        held += 1
        if held == 5000:
            os.write(1, b"held 5000 files\n")  # one write: seven processes print

for _ in range(6):
    if os.fork() == 0:
        held, why = hold()
        os.write(1, f"stopped after {held} files: {why}\n".encode())
        os._exit(0)
held, why = hold()
os.write(1, f"stopped after {held} files: {why}\n".encode())
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
`

// TestFileTableHoldsEverySandbox: a sandbox's open files are bounded by
// its memory, not by its descriptors, and the host's file table has room
// for what every sandbox slot could hold at the ceilings.
//
// From inside: with 8 processes of 64 descriptors (512 in all), each of
// seven processes holds 5000 files and more, since a mapped file stays open
// after close; the memory limit stops them (an OOM kill: every open
// file's kernel object is charged to the sandbox's memory cgroup), and
// none is ever refused a file by the host's table (ENFILE). It runs alone,
// not among the parallel cases: filling memory with kernel objects takes
// seconds of system time.
//
// On the host: fs.file-max, which refuses files to every unprivileged
// process once reached, leaves room for every uid slot of the suite at
// the ceiling's memory, each file costing at least the filp slab's object
// size. Before the supervisor raised it, fs.file-max (2 466 174 on a
// 24 GiB host) was below what two sandboxes at the default 512 MiB could
// hold.
func TestFileTableHoldsEverySandbox(t *testing.T) {
	s := requireRoot(t)
	// The program must reach its memory limit before its timeout: a
	// timeout it must not hit, so it scales with the environment (the
	// cgroup v2 VM runs python and its system calls many times slower),
	// within the server's ceiling.
	timeout := min(testbin.Scaled(time.Minute), time.Duration(limits.DefaultCeilings().TimeoutMs)*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+testbin.Scaled(time.Minute))
	defer cancel()
	resp, err := s.client.Execute(ctx, &sandboxv1.ExecuteRequest{
		Source:  &sandboxv1.ExecuteRequest_Code{Code: holdFiles},
		Runtime: sandboxv1.Runtime_RUNTIME_PYTHON,
		Limits: &sandboxv1.ResourceLimits{
			MaxMemoryBytes: 32 << 20, MaxProcesses: 8, MaxFileDescriptors: 64, TimeoutMs: timeout.Milliseconds(),
		},
	})
	if err != nil {
		t.Fatalf("Execute: %v%s", err, s.logTail())
	}
	out := resp.GetOutput()
	switch {
	case !strings.Contains(out, "descriptors: at most 64 per process\n"):
		t.Errorf("the sandbox's RLIMIT_NOFILE is not 64: %s", describe(resp))
	case !strings.Contains(out, "held 5000 files\n"):
		t.Errorf("no process held 5000 files (for 512 descriptors in all): %s", describe(resp))
	case strings.Contains(out, "ENFILE"):
		t.Errorf("the host's file table refused the sandbox a file: %s", describe(resp))
	case resp.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY && !strings.Contains(out, "ENOMEM"):
		t.Errorf("the sandbox's files were not stopped by its memory: %s", describe(resp))
	default:
		t.Logf("%s", describe(resp))
	}
	// Its processes take a while to close what they held; the sandbox
	// must still go whole (a cgroup whose removal gave up stayed behind).
	if l := s.sandboxGone(s.stateDir, resp.GetOutcome().GetSandboxId()); len(l) > 0 {
		t.Errorf("left on the host after the sandbox that held every file:\n%s", strings.Join(l, "\n"))
	}

	field := func(path string) int64 {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return n
	}
	fileMax := field("/proc/sys/fs/file-max")
	allocated := field("/proc/sys/fs/file-nr")
	fileBytes := int64(128) // smaller than struct file has ever been
	if _, err := os.Stat("/sys/kernel/slab/filp/object_size"); err == nil {
		fileBytes = field("/sys/kernel/slab/filp/object_size")
	}
	// The memory ceiling is the default's, lowered to the host's memory
	// budget as the supervisor lowers it (supervisor.Config.MemoryBudgetBytes).
	ceil := limits.DefaultCeilings()
	mem, err := host.ReadMemory("/")
	if err != nil {
		t.Fatal(err)
	}
	ceil.MemoryBytes = min(ceil.MemoryBytes, mem.DefaultBudgetBytes())
	perSandbox := ceil.MemoryBytes / fileBytes
	if room, need := fileMax-allocated, int64(uidSlots)*perSandbox; room < need {
		t.Errorf("fs.file-max %d with %d files open leaves room for %d more; %d sandboxes at the ceiling of %d bytes could hold %d each (%d bytes a file), %d in all",
			fileMax, allocated, room, uidSlots, ceil.MemoryBytes, perSandbox, fileBytes, need)
	}
}
