package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

// helperEnv selects a helper process: the test binary re-executes itself
// with EXECFARM_CGROUP_HELPER=mode (go-plugin's and runc's pattern).
const helperEnv = "EXECFARM_CGROUP_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	leakcheck.Main(m)
}

// runHelper is the body of a helper process. Every mode first waits for
// one byte on stdin: the release after AddProc, like the worker's sync
// pipe on v1.
func runHelper(mode string) int {
	var b [1]byte
	if _, err := os.Stdin.Read(b[:]); err != nil {
		return 3
	}
	switch mode {
	case "alloc": // allocate and touch memory until the OOM killer strikes
		var keep [][]byte
		for {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = byte(i)
			}
			keep = append(keep, chunk)
			sink = keep
		}
	case "busy": // burn >= 50 ms of CPU, touch 16 MiB, exit 0
		start := time.Now()
		x := 0
		for time.Since(start) < 100*time.Millisecond {
			x++
		}
		buf := make([]byte, 16<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = byte(x | 1)
		}
		runtime.KeepAlive(buf)
		return 0
	case "spawn": // start two grandchildren, print their pids, block
		var pids []string
		for range 2 {
			c := exec.Command("sleep", "60")
			if err := c.Start(); err != nil {
				return 4
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		fmt.Println(strings.Join(pids, " "))
		_, _ = os.Stdin.Read(b[:])
		return 0
	}
	return 2
}

// helper is a started helper process, held before its work until release.
type helper struct {
	cmd     *exec.Cmd
	release io.WriteCloser
	out     *bufio.Reader
}

func startHelper(t *testing.T, mode string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	h := &helper{cmd: cmd, release: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	return h
}

func (h *helper) start(t *testing.T) {
	t.Helper()
	if _, err := h.release.Write([]byte{1}); err != nil {
		t.Fatalf("release helper: %v", err)
	}
}

// startSleep starts `sleep 60`, reaped at cleanup.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// wantSIGKILL asserts that a Wait result is a death by SIGKILL.
func wantSIGKILL(t *testing.T, err error) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Wait() = %v, want death by SIGKILL", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("Wait() = %v, want death by SIGKILL", err)
	}
}

// sink keeps the "oom" helper's allocations reachable.
var sink [][]byte
