//go:build linux

package hostile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// The suite's host uid window: uidSlots ranges of rangeSize ids from
// 3<<30, placed by the test process's pid, so that its sandboxes never
// share a host uid with those of another supervisor (1<<30 onwards) or of
// the integration suite (2<<30 onwards) running at the same time.
const (
	rangeSize     = 65536
	uidSlots      = 16
	maxConcurrent = 4
)

// suite is the one supervisor every case talks to, and what was set up on
// the host for it. Set by TestMain; reached through requireRoot.
type suite struct {
	dir       string // 0755 temporary directory: worker binary, state dir, log
	stateDir  string // the supervisor's state directory (sb/<id> per sandbox)
	socket    string // the supervisor's unix socket
	worker    string // the execfarm-worker binary built for this run
	logPath   string // the supervisor's log file
	cg        cgroup.Config
	cgParents []string // sandbox cgroup parents, one per controller (v1)
	uidBase   uint32   // first host uid of the window
	uidEnd    uint32   // first host uid past the window

	// sandboxes is the supervisor's sandbox configuration (its uid
	// pool included): session cases start their sandboxes with it.
	sandboxes sandbox.Config

	srv     *supervisor.Server
	conn    *grpc.ClientConn
	client  sandboxv1.SandboxServiceClient
	cancel  context.CancelFunc
	done    chan error
	logFile *os.File

	// proxied is the supervisor of the host-proxy cases.
	proxied proxiedSupervisor
}

var (
	the      *suite
	setupErr error
)

func TestMain(m *testing.M) {
	leakcheck.Main(suiteM{m}, leakcheck.IgnoreGoroutines(sandbox.ProcessGoroutines...), leakcheck.IgnoreFDs(sandbox.ProcessFDs), leakcheck.IgnoreFDs(transformer.ProcessFDs))
}

// suiteM runs the cases around the suite's set-up and teardown, so that
// the leak checks see what the teardown left.
type suiteM struct{ m *testing.M }

func (s suiteM) Run() int {
	var teardown func() error
	if os.Geteuid() == 0 {
		the, teardown, setupErr = setup()
	}
	code := s.m.Run()
	if teardown != nil {
		if err := teardown(); err != nil {
			fmt.Fprintln(os.Stderr, "hostile: teardown:", err)
			code = 1
		}
	}
	return code
}

// requireRoot is the suite's only skip: sandboxes need root. As root, a
// host that cannot isolate or a supervisor that did not start fails the
// test.
func requireRoot(t testing.TB) *suite {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		t.Skipf("hostile: needs root to create namespaces and cgroups (euid %d)", euid)
	}
	if setupErr != nil {
		t.Fatalf("hostile: suite setup: %v", setupErr)
	}
	return the
}

// setup builds the worker and starts the supervisor. teardown (non-nil
// once something was created) stops it and removes what the suite made.
func setup() (s *suite, teardown func() error, err error) {
	s = &suite{
		cg:      cgroup.Config{Parent: fmt.Sprintf("/execfarm-hostile-%d", os.Getpid())},
		uidBase: 3<<30 + uint32(os.Getpid()%256)*uidSlots*rangeSize,
	}
	s.uidEnd = s.uidBase + uidSlots*rangeSize
	// The probe scans the suite's own uid window, not the default one
	// (which a supervisor running on the host may be using).
	layers, err := host.Check(probe.Config{
		Cgroup: s.cg, UIDBase: s.uidBase, UIDRangeSize: rangeSize, UIDSlots: uidSlots,
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("host probe: %w", err)
	}
	s.cgParents = cgroup.Probe(s.cg).Parents
	// Not t.TempDir: its parent is 0700 and the sandbox's unprivileged
	// root must reach the worker binary.
	if s.dir, err = os.MkdirTemp("", "execfarm-hostile-"); err != nil {
		return nil, nil, err
	}
	teardown = func() error {
		var errs []error
		for _, sv := range []*served{{conn: s.conn, cancel: s.cancel, done: s.done}, s.proxied.served} {
			if sv != nil && sv.cancel != nil {
				if sv.conn != nil {
					sv.conn.Close()
				}
				sv.cancel()
				if err := <-sv.done; err != nil {
					errs = append(errs, fmt.Errorf("stop supervisor: %w", err))
				}
			}
		}
		s.proxied.close()
		return errors.Join(append(errs, hostscan.RemoveLeftovers(s.cg, s.logFile, s.dir))...)
	}
	if err := s.start(layers); err != nil {
		return s, teardown, err // teardown needs s
	}
	return s, teardown, nil
}

func (s *suite) start(layers []*sandboxv1.IsolationLayer) error {
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	s.logPath = filepath.Join(s.dir, "supervisor.log")
	var err error
	if s.logFile, err = os.Create(s.logPath); err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "hostile", Level: hclog.Debug, Output: s.logFile})
	// $EXECFARM_WORKER names a prebuilt worker, with the goja runtime
	// next to it (its directories must be traversable by unprivileged
	// uids); otherwise the suite builds them.
	if s.worker = os.Getenv("EXECFARM_WORKER"); s.worker == "" {
		s.worker = filepath.Join(s.dir, "execfarm-worker")
		if err := testbin.Build(s.dir, testbin.Sandbox...); err != nil {
			return err
		}
	}
	s.stateDir = filepath.Join(s.dir, "state")
	sv, err := s.serve(log, layers, s.stateDir, sandbox.NewIDPool(s.uidBase, rangeSize, uidSlots-proxiedSlots), maxConcurrent, nil)
	if err != nil {
		return err
	}
	s.srv, s.socket, s.conn, s.client, s.cancel, s.done = sv.srv, sv.socket, sv.conn, sv.client, sv.cancel, sv.done
	s.sandboxes = sv.sandboxes
	// The supervisor with Kubernetes and Prometheus access, for the cases
	// that set up host-proxy (proxied_linux_test.go).
	return s.startProxied(log, layers)
}

// served is one supervisor the suite serves in-process.
type served struct {
	// sandboxes is its sandbox configuration (its uid pool included).
	sandboxes sandbox.Config
	srv       *supervisor.Server
	socket    string
	conn      *grpc.ClientConn
	client    sandboxv1.SandboxServiceClient
	cancel    context.CancelFunc
	done      chan error
}

// serve starts a supervisor with state directory stateDir (created), uid
// ranges ids and maxConc execution slots on a unix socket in stateDir;
// adjust, if set, changes its configuration last.
func (s *suite) serve(log hclog.Logger, layers []*sandboxv1.IsolationLayer, stateDir string, ids *sandbox.IDPool, maxConc int, adjust func(*supervisor.Config) error) (*served, error) {
	if err := os.Mkdir(stateDir, 0o755); err != nil {
		return nil, err
	}
	cfg := supervisor.Config{
		MaxConcurrent: maxConc,
		Layers:        layers,
		Version:       "hostile",
		Logger:        log,
		Sandbox: sandbox.Config{
			WorkerBinary: s.worker,
			StateDir:     stateDir,
			Cgroup:       s.cg,
			IDs:          ids,
			Logger:       log,
			// The default 10 s, in the environment's time.
			StartTimeout: testbin.Scaled(10 * time.Second),
		},
	}
	// The node runtime, from the repository's bundle (make bundle); when
	// it is not installed, node cases fail (UNIMPLEMENTED) saying so.
	if _, err := supervisor.NodeRuntime(&cfg, repoBundle(), os.Getenv); err != nil && !errors.Is(err, node.ErrNoBundle) {
		return nil, fmt.Errorf("node runtime: %w", err)
	}
	if adjust != nil {
		if err := adjust(&cfg); err != nil {
			return nil, err
		}
	}
	srv, err := supervisor.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("new supervisor: %w", err)
	}
	sv := &served{srv: srv, socket: filepath.Join(stateDir, "execfarm.sock"), sandboxes: cfg.Sandbox}
	tc := transport.Config{SocketPath: sv.socket}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- supervisor.ListenAndServe(ctx, srv, tc, 5*time.Second, func(string) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("serve: %w", err)
	}
	sv.cancel, sv.done = cancel, done
	if sv.conn, err = tc.Dial(); err != nil {
		return nil, fmt.Errorf("dial supervisor: %w", err)
	}
	sv.client = sandboxv1.NewSandboxServiceClient(sv.conn)
	return sv, nil
}

// repoBundle is the repository's node runtime bundle (runtime/node/bundle).
func repoBundle() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "runtime", "node", "bundle")
}

// logAbout returns the supervisor's log lines that name the sandbox id
// (crash headlines and the last 15 of them), for failure messages.
func (s *suite) logAbout(id string) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || id == "" {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, id) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	// A crash's first lines say why; keep them, then the end.
	var picked []string
	for _, l := range lines {
		if len(picked) < 10 && crashLine.MatchString(l) {
			picked = append(picked, l)
		}
	}
	if len(lines) > 15 {
		lines = append(picked, append([]string{"…"}, lines[len(lines)-15:]...)...)
	}
	return "\n  supervisor log about " + id + ":\n    " + strings.Join(lines, "\n    ")
}

// crashLine matches the log lines that say why a worker died.
var crashLine = regexp.MustCompile(`fatal|panic|pthread_create|failed to create|SIG[A-Z]+:|runtime/cgo|\[ERROR\]`)

// logTail returns the end of the supervisor's log, for failure messages.
func (s *suite) logTail() string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	if len(b) == 0 {
		return ""
	}
	return "\nsupervisor log (tail):\n" + string(b)
}
