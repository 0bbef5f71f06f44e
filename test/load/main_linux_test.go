package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// The suite's host uid window: from 3<<30 + 1<<28 (above the integration
// suite's [2<<30, 3<<30) and the hostile suite's [3<<30, 3<<30+1<<28)),
// placed by the test process's pid; each server gets serverSlots ranges.
const (
	rangeSize   = 65536
	serverSlots = 16
	windowSlots = 2 * serverSlots
)

// Set by TestMain.
var (
	binDir     string // 0755 directory holding execfarm and execfarm-worker
	skipReason string
	setupErr   error
	uidBase    uint32
	cgParent   string
)

func TestMain(m *testing.M) {
	leakcheck.Main(suiteM{m}, leakcheck.IgnoreFDs(transformer.ProcessFDs))
}

type suiteM struct{ m *testing.M }

func (s suiteM) Run() int {
	teardown := setup()
	code := s.m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "load: teardown:", err)
		code = 1
	}
	return code
}

// setup builds execfarm and execfarm-worker into a 0755 temporary
// directory (sandbox root, an unprivileged host uid, must reach the
// worker). A non-root run skips.
func setup() (teardown func() error) {
	teardown = func() error { return nil }
	if euid := os.Geteuid(); euid != 0 {
		skipReason = fmt.Sprintf("needs root (euid is %d)", euid)
		return teardown
	}
	uidBase = 3<<30 + 1<<28 + uint32(os.Getpid()%256)*windowSlots*rangeSize
	cgParent = fmt.Sprintf("/execfarm-load-%d", os.Getpid())
	var err error
	if binDir, err = os.MkdirTemp("", "execfarm-load-"); err != nil {
		setupErr = err
		return teardown
	}
	teardown = func() error {
		return hostscan.RemoveLeftovers(cgroup.Config{Parent: cgParent}, nil, binDir)
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		setupErr = err
		return teardown
	}
	if err := testbin.Build(binDir, append([]string{"execfarm"}, testbin.Sandbox...)...); err != nil {
		setupErr = err
	}
	return teardown
}

func requireRoot(t testing.TB) {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("load: setup: %v", setupErr)
	}
	if skipReason != "" {
		t.Skipf("load: %s", skipReason)
	}
}

// clientConfig is the client side of serve's flags: its unix socket, or
// --tcp with --host/--port, and --token-file.
func clientConfig(sock string, flags []string) transport.Config {
	tc := transport.Config{SocketPath: sock}
	for i := 0; i < len(flags); i++ {
		next := func() string {
			if i+1 < len(flags) {
				i++
				return flags[i]
			}
			return ""
		}
		switch flags[i] {
		case "--tcp":
			tc.UseTCP, tc.SocketPath = true, ""
		case "--host":
			tc.TCPHost = next()
		case "--port":
			tc.TCPPort, _ = strconv.Atoi(next())
		case "--token-file":
			tc.TokenPath = next()
		}
	}
	return tc
}

// server is one `execfarm serve` process and a client of it.
type server struct {
	proc   *testbin.Serve
	dir    string
	conn   *grpc.ClientConn
	client sandboxv1.SandboxServiceClient
}

// startServer runs `execfarm serve` with the given window slot (0 or 1 of
// the suite's window) and extra flags, waits until it answers HealthCheck,
// and stops it (SIGTERM, then checks its exit) when the test ends.
func startServer(t *testing.T, slot int, flags ...string) *server {
	t.Helper()
	return startServerVia(t, slot, nil, flags...)
}

// startServerVia is startServer with the serve command run by prefix
// (prefix, then the execfarm binary and its arguments; nil: the binary
// itself).
func startServerVia(t *testing.T, slot int, prefix []string, flags ...string) *server {
	t.Helper()
	// Short: sandbox plugin sockets live below it, and a unix socket path
	// has at most 107 bytes.
	dir, err := os.MkdirTemp("", "efl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "execfarm.sock")
	bin := filepath.Join(binDir, "execfarm")
	args := append([]string{"serve",
		"--socket", sock, "--state-dir", dir, "--cgroup-parent", cgParent,
		"--uid-base", strconv.FormatUint(uint64(uidBase)+uint64(slot*serverSlots*rangeSize), 10),
		"--scripts-cache-dir", filepath.Join(dir, "scripts"), "--grace", "2s",
		// serve's uid window is --max-concurrent + --warm-pool +
		// --max-sandboxes + 8 ranges: keep it within serverSlots unless
		// a test asks for more (a later flag wins).
		"--max-sandboxes", "2",
	}, flags...)
	if len(prefix) > 0 {
		bin, args = prefix[0], append(append(append([]string(nil), prefix[1:]...), bin), args...)
	}
	s := &server{dir: dir}
	if s.proc, err = testbin.StartServe(bin, args...); err != nil {
		t.Fatalf("start execfarm serve: %v", err)
	}
	stop := func() error {
		if s.conn != nil {
			s.conn.Close()
		}
		return s.proc.Stop(30 * time.Second)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop execfarm serve: %v\n%s", err, s.logText())
		}
	})
	tc := clientConfig(sock, flags)
	if s.conn, err = tc.Dial(); err != nil {
		t.Fatalf("dial: %v", err)
	}
	s.client = sandboxv1.NewSandboxServiceClient(s.conn)
	// The socket appears when serve listens; until then WaitForReady
	// retries. A serve that exits (host cannot isolate) ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		select {
		case <-s.proc.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := s.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		_ = stop()
		t.Fatalf("execfarm serve never answered: %v\n%s", err, s.logText())
	}
	return s
}

func (s *server) logText() string {
	return "execfarm serve log (tail):\n" + s.proc.Log(4096)
}

// rssBytes returns the resident set size of process pid (VmRSS), bytes.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// rssSampler records the highest RSS of pid, read every interval, until
// stop is called; stop returns the peak and the sample count.
func rssSampler(pid int, interval time.Duration) (stop func() (peak int64, samples int, err error)) {
	done := make(chan struct{})
	var (
		peak    int64
		samples int
		serr    error
	)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			rss, err := rssBytes(pid)
			if err != nil {
				serr = err
				return
			}
			samples++
			peak = max(peak, rss)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int, error) {
		close(done)
		<-finished
		return peak, samples, serr
	}
}

// vmHWM returns the high-water mark of process pid's resident set
// (VmHWM in /proc/PID/status), bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// resetHWM resets process pid's VmHWM to its current RSS (clear_refs
// 5), so that what is read next is the peak of what follows.
func resetHWM(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset VmHWM: %v", err)
	}
}

// checkHWM fails t when the supervisor's VmHWM is over rssBound, the
// memory bound SECURITY.md states for default settings.
func checkHWM(t *testing.T, s *server, what string) {
	t.Helper()
	hwm := vmHWM(t, s.proc.Pid())
	t.Logf("supervisor VmHWM after %s: %s (bound %s)", what, mib(hwm), mib(rssBound))
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s after %s, over the bound %s\n%s", mib(hwm), what, mib(rssBound), s.logText())
	}
}
