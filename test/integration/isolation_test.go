//go:build linux

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/test/hostscan"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestIsolationThroughTheAPI runs shell (and python) programs that look at
// their surroundings and checks that they see a sandbox, not the host.
func TestIsolationThroughTheAPI(t *testing.T) {
	in := requireSandbox(t)

	t.Run("uid 1000", func(t *testing.T) {
		resp := execute(t, in.client, shellReq("id -u", 0))
		if !resp.GetSuccess() || resp.GetOutput() != "1000\n" {
			t.Fatalf("id -u: %s", describe(resp))
		}
	})

	t.Run("own pid namespace", func(t *testing.T) {
		resp := execute(t, in.client, shellReq("ls /proc", 0))
		if !resp.GetSuccess() {
			t.Fatalf("ls /proc: %s", describe(resp))
		}
		var pids []int
		sc := bufio.NewScanner(strings.NewReader(resp.GetOutput()))
		for sc.Scan() {
			if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
				pids = append(pids, pid)
			}
		}
		// The worker (pid 1), sh and ls; a handful at most.
		if len(pids) == 0 || len(pids) > 5 {
			t.Fatalf("/proc lists %d processes %v; want the sandbox's own few", len(pids), pids)
		}
		for _, pid := range pids {
			if pid == os.Getpid() {
				t.Fatalf("/proc in the sandbox lists the test process's host pid %d: %v", pid, pids)
			}
		}
		if pids[0] != 1 {
			t.Fatalf("/proc lists %v; want pid 1 (the sandbox's init) first", pids)
		}
	})

	t.Run("read-only /usr", func(t *testing.T) {
		name := fmt.Sprintf("/usr/execfarm-itest-%d", os.Getpid())
		resp := execute(t, in.client, shellReq("echo x > "+name, 0))
		if resp.GetSuccess() || resp.GetOutcome().GetExitCode() == 0 {
			t.Fatalf("writing to /usr succeeded: %s", describe(resp))
		}
		if _, err := os.Stat(name); err == nil {
			os.Remove(name)
			t.Fatalf("the sandbox created %s on the host", name)
		}
	})

	t.Run("host secrets unreadable", func(t *testing.T) {
		var tok [16]byte
		_, _ = rand.Read(tok[:])
		secret := "execfarm-itest-secret-" + hex.EncodeToString(tok[:])
		path := fmt.Sprintf("/etc/execfarm-itest-secret-%d", os.Getpid())
		if err := os.WriteFile(path, []byte(secret+"\n"), 0o644); err != nil {
			t.Fatalf("plant secret: %v", err)
		}
		t.Cleanup(func() { os.Remove(path) })
		shadowLine := ""
		if b, err := os.ReadFile("/etc/shadow"); err == nil {
			shadowLine, _, _ = strings.Cut(string(b), "\n")
		}
		tests := []struct{ name, code string }{
			{"planted file", "cat " + path},
			{"shadow", "cat /etc/shadow"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp := execute(t, in.client, shellReq(tt.code, 0))
				all := resp.GetOutput() + resp.GetErrorOutput()
				if resp.GetSuccess() {
					t.Fatalf("%s succeeded: %s", tt.code, describe(resp))
				}
				if strings.Contains(all, secret) || (shadowLine != "" && strings.Contains(all, shadowLine)) || strings.Contains(all, "root:") {
					t.Fatalf("%s leaked host content: %q", tt.code, all)
				}
			})
		}
		resp := execute(t, in.client, shellReq("ls -a /etc", 0))
		if !resp.GetSuccess() || strings.Contains(resp.GetOutput(), "execfarm-itest-secret") || strings.Contains(resp.GetOutput(), "shadow") {
			t.Fatalf("ls -a /etc in the sandbox: %s", describe(resp))
		}
	})

	t.Run("no host network", func(t *testing.T) {
		requirePython(t)
		port, accepted := hostscan.Listener(t)
		code := fmt.Sprintf(`import socket, sys
try:
    socket.create_connection(("127.0.0.1", %d), timeout=5).close()
except OSError as e:
    print("failed", type(e).__name__)
    sys.exit(0)
print("connected")
sys.exit(1)`, port)
		resp := execute(t, in.client, pythonReq(code, 0))
		if !resp.GetSuccess() || !strings.HasPrefix(resp.GetOutput(), "failed") {
			t.Fatalf("connect to the host's 127.0.0.1:%d: %s", port, describe(resp))
		}
		if n := accepted(); n != 0 {
			t.Fatalf("the host listener accepted %d connections from the sandbox", n)
		}
	})

	t.Run("own hostname", func(t *testing.T) {
		hostname, err := os.Hostname()
		if err != nil {
			t.Fatalf("hostname: %v", err)
		}
		resp := execute(t, in.client, shellReq("uname -n", 0))
		got := strings.TrimSpace(resp.GetOutput())
		if !resp.GetSuccess() || got == "" || got == hostname {
			t.Fatalf("uname -n in the sandbox = %q (host: %q): %s", got, hostname, describe(resp))
		}
	})

	t.Run("python runtime", func(t *testing.T) {
		requirePython(t)
		resp := execute(t, in.client, pythonReq("import os; print(os.getuid(), os.getppid())", 0))
		if !resp.GetSuccess() || resp.GetOutput() != "1000 1\n" {
			t.Fatalf("python: %s", describe(resp))
		}
		if resp.GetOutcome().GetRuntime() != sandboxv1.Runtime_RUNTIME_PYTHON {
			t.Fatalf("outcome runtime %s; want RUNTIME_PYTHON", resp.GetOutcome().GetRuntime())
		}
	})
}
