package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInnermostPid: a process's pid in its own pid namespace, which Quiet
// compares with the worker's word on its kept process: the test's own on
// the host, 1 for the first process of a new pid namespace.
func TestInnermostPid(t *testing.T) {
	if got := innermostPid(os.Getpid()); got != os.Getpid() {
		t.Errorf("innermostPid(self) = %d, want %d", got, os.Getpid())
	}
	if os.Geteuid() != 0 {
		t.Skip("a new pid namespace needs root")
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// unshare's child, the namespace's first process.
	children := ""
	for deadline := time.Now().Add(10 * time.Second); children == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		children = strings.TrimSpace(string(b))
	}
	child, err := strconv.Atoi(children)
	if err != nil {
		t.Fatalf("unshare's child: %q", children)
	}
	defer syscall.Kill(child, syscall.SIGKILL)
	if got := innermostPid(child); got != 1 {
		t.Errorf("innermostPid(first process of a new pid namespace) = %d, want 1", got)
	}
	if got := innermostPid(1 << 30); got != 0 {
		t.Errorf("innermostPid(no such process) = %d, want 0", got)
	}
}
