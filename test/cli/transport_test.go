//go:build linux

package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/test/testbin"
)

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// shortDir is a temporary directory with a short name: a state directory
// must leave room in a unix socket path.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "efcli-tcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startServeEnv starts a second serve with extra environment and flags,
// in a uid window of its own (above TestServeLog's), and returns it once
// it logs "serving"; the test stops it.
func startServeEnv(t *testing.T, extraEnv []string, flags ...string) *testbin.Serve {
	t.Helper()
	dir := shortDir(t)
	uidBase := 3<<30 + 2<<28 + 1<<27 + uint64(os.Getpid()%32+128)*serveSlots*rangeSize
	args := append([]string{"serve", "--state-dir", filepath.Join(dir, "state"),
		"--cgroup-parent", fmt.Sprintf("/execfarm-cli-tcp-%d", os.Getpid()), "--uid-base", strconv.FormatUint(uidBase, 10),
		"--max-concurrent", "1", "--max-sandboxes", "1", "--scripts-cache-dir", filepath.Join(dir, "scripts"), "--grace", "1s", "--log-format", "json"}, flags...)
	s, err := testbin.StartServeEnv(filepath.Join(env.bin, "execfarm"), append(cleanEnv(), extraEnv...), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(30 * time.Second); err != nil {
			t.Errorf("stop: %v\n%s", err, s.Log(4096))
		}
	})
	if err := s.WaitLog(context.Background(), `"serving"`, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, s.Log(4096))
	}
	return s
}

// TestTransportChoice: serve and the client choose between the unix
// socket and TCP flags first, then as ProDisco's server and client do:
// SANDBOX_USE_TCP, else TCP when SANDBOX_TCP_HOST or SANDBOX_TCP_PORT is
// set. A red-team pass found `SANDBOX_USE_TCP=true execfarm serve
// --tcp=false` serving TCP, and a serve given only SANDBOX_TCP_PORT on the
// unix socket, where ProDisco's TCP tests expect TCP.
func TestTransportChoice(t *testing.T) {
	requireServe(t)
	t.Run("--tcp=false beats SANDBOX_USE_TCP", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		sock := filepath.Join(shortDir(t), "s.sock")
		s := startServeEnv(t, []string{"SANDBOX_USE_TCP=true", "SANDBOX_TCP_PORT=" + port}, "--tcp=false", "--socket", sock)
		if !strings.Contains(s.Log(0), `"address":"unix://`+sock+`"`) {
			t.Errorf("serve --tcp=false with SANDBOX_USE_TCP=true: want the unix socket %s; log:\n%s", sock, s.Log(4096))
		}
		// The client's flags beat its environment likewise.
		for _, args := range [][]string{{"health", "--tcp=false", "--socket", sock}, {"health", "--socket", sock}} {
			if r := execfarmIn(t, []string{"SANDBOX_USE_TCP=true", "SANDBOX_TCP_PORT=" + port}, args...); r.code != 0 {
				t.Errorf("SANDBOX_USE_TCP=true execfarm %v: exit %d, %s", args, r.code, r.stderr)
			}
		}
		if r := execfarmIn(t, []string{"SANDBOX_USE_TCP=true", "SANDBOX_TCP_PORT=" + port}, "health"); r.code != 127 {
			t.Errorf("execfarm health over TCP port %s, where nothing listens: exit %d, want %d", port, r.code, 127)
		}
	})
	t.Run("SANDBOX_TCP_PORT alone means TCP", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		s := startServeEnv(t, []string{"SANDBOX_TCP_PORT=" + port})
		if !strings.Contains(s.Log(0), `"address":"localhost:`+port+`"`) {
			t.Errorf("serve with SANDBOX_TCP_PORT=%s alone: want TCP; log:\n%s", port, s.Log(4096))
		}
		// The client infers TCP from the port alone too.
		if r := execfarmIn(t, []string{"SANDBOX_TCP_PORT=" + port}, "health"); r.code != 0 {
			t.Errorf("SANDBOX_TCP_PORT=%s execfarm health: exit %d, %s", port, r.code, r.stderr)
		}
		if r := execfarmIn(t, nil, "health", "--port", port); r.code != 0 {
			t.Errorf("execfarm health --port %s: exit %d, %s", port, r.code, r.stderr)
		}
	})
	t.Run("SANDBOX_TCP_HOST without SANDBOX_USE_TCP means TCP", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		s := startServeEnv(t, []string{"SANDBOX_TCP_HOST=127.0.0.1", "SANDBOX_TCP_PORT=" + port})
		if !strings.Contains(s.Log(0), `"address":"127.0.0.1:`+port+`"`) {
			t.Errorf("serve with SANDBOX_TCP_HOST and SANDBOX_TCP_PORT: want TCP; log:\n%s", s.Log(4096))
		}
		if r := execfarmIn(t, []string{"SANDBOX_TCP_HOST=127.0.0.1"}, "health", "--port", port); r.code != 0 {
			t.Errorf("SANDBOX_TCP_HOST=127.0.0.1 execfarm health --port %s: exit %d, %s", port, r.code, r.stderr)
		}
	})
}
