//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	"github.com/execfarm/execfarm/supervisor/cache"
	svhost "github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// The suite's host uid window: uidSlots ranges of rangeSize ids, placed
// from 2<<30 by the test process's pid so that the sandboxes of this run
// never share a host uid with those of another supervisor on the host
// (which start at svhost.DefaultUIDBase, 1<<30). Scans for leftover
// processes look at this window only.
const (
	rangeSize   = 65536
	uidSlots    = 40
	sharedSlots = 16 // slots [0, 16) for the shared supervisor, the rest for others
)

// Set by TestMain. Exactly one of shared and (skipReason or setupErr) is
// meaningful; tests reach them only through requireSandbox.
var (
	shared     *instance // the supervisor most tests talk to
	host       hostEnv
	skipReason string
	setupErr   error
)

// hostEnv is what the suite set up on the host.
type hostEnv struct {
	dir       string // 0755 temporary directory: worker binary, state dirs, log
	worker    string // the execfarm-worker binary built for this run
	cg        cgroup.Config
	cgParents []string // resolved parent cgroup directories, one per controller (v1)
	layers    []*sandboxv1.IsolationLayer
	uidBase   uint32 // first host uid of the window
	uidEnd    uint32 // first host uid past the window
	log       hclog.Logger
	logFile   *os.File
}

// instance is one supervisor served in-process and a client connected to it.
type instance struct {
	srv      *supervisor.Server
	stateDir string
	tc       transport.Config
	conn     *grpc.ClientConn
	client   sandboxv1.SandboxServiceClient
	cancel   context.CancelFunc
	done     chan error
}

func TestMain(m *testing.M) {
	leakcheck.Main(suiteM{m}, leakcheck.IgnoreGoroutines(sandbox.ProcessGoroutines...), leakcheck.IgnoreFDs(sandbox.ProcessFDs), leakcheck.IgnoreFDs(transformer.ProcessFDs))
}

// suiteM wraps m so that the leak checks run after the suite's teardown.
type suiteM struct{ m *testing.M }

func (s suiteM) Run() int {
	teardown := setup()
	code := s.m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: teardown:", err)
		code = 1
	}
	return code
}

// setup decides whether the host can run sandboxes and, if so, builds the
// worker and starts the shared supervisor. A missing layer sets
// skipReason; a failure when every layer is present sets setupErr.
func setup() (teardown func() error) {
	nothing := func() error { return nil }
	if euid := os.Geteuid(); euid != 0 {
		skipReason = fmt.Sprintf("needs root (euid is %d)", euid)
		return nothing
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		skipReason = "no user namespaces: " + err.Error()
		return nothing
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		skipReason = "user namespaces disabled (user.max_user_namespaces = 0)"
		return nothing
	}
	host.cg = cgroup.Config{Parent: fmt.Sprintf("/execfarm-itest-%d", os.Getpid())}
	host.uidBase = 2<<30 + uint32(os.Getpid()%512)*uidSlots*rangeSize
	host.uidEnd = host.uidBase + uidSlots*rangeSize
	// The probe scans the suite's own uid window, not the default one
	// (which a supervisor running on the host may be using).
	layers, err := svhost.Check(probe.Config{
		Cgroup: host.cg, UIDBase: host.uidBase, UIDRangeSize: rangeSize, UIDSlots: uidSlots,
	}, nil)
	// A kernel without a layer is a reason to skip; processes left in the
	// uid window (layer uid-range) are a broken host, and fail the suite.
	var missing *probe.MissingError
	if errors.As(err, &missing) && !slices.ContainsFunc(missing.Layers, func(l probe.Layer) bool { return l.Name == probe.UIDRange }) {
		skipReason = err.Error()
		return nothing
	}
	if err != nil {
		setupErr = err
		return nothing
	}
	host.layers = layers
	host.cgParents = cgroup.Probe(host.cg).Parents

	// Not t.TempDir: its parent is 0700, and the sandbox's root (an
	// unprivileged host uid) must reach the worker binary.
	host.dir, err = os.MkdirTemp("", "execfarm-itest-")
	if err != nil {
		setupErr = err
		return nothing
	}
	teardown = func() error {
		var errs []error
		if shared != nil {
			if err := shared.stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop shared supervisor: %w", err))
			}
			shared = nil
		}
		return errors.Join(append(errs, hostscan.RemoveLeftovers(host.cg, host.logFile, host.dir))...)
	}
	if err := os.Chmod(host.dir, 0o755); err != nil {
		setupErr = err
		return teardown
	}
	host.logFile, err = os.Create(filepath.Join(host.dir, "supervisor.log"))
	if err != nil {
		setupErr = err
		return teardown
	}
	host.log = hclog.New(&hclog.LoggerOptions{Name: "itest", Level: hclog.Info, Output: host.logFile})
	// $EXECFARM_WORKER names a prebuilt worker (its directories must be
	// traversable by unprivileged uids); otherwise the suite builds one.
	host.worker = os.Getenv("EXECFARM_WORKER")
	if host.worker == "" {
		host.worker = filepath.Join(host.dir, "execfarm-worker")
		if err := testbin.Build(host.dir, testbin.Sandbox...); err != nil {
			setupErr = err
			return teardown
		}
	}
	shared, err = startInstance("shared", 0, sharedSlots, 4, 10*time.Second)
	if err != nil {
		setupErr = fmt.Errorf("start supervisor: %w", err)
		return teardown
	}
	// A first sandbox: the layers are there, so it must work.
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(30*time.Second))
	defer cancel()
	resp, err := shared.client.Execute(ctx, shellReq("true", 0))
	switch {
	case err != nil:
		setupErr = fmt.Errorf("first execution: %w", err)
	case !resp.GetSuccess():
		setupErr = fmt.Errorf("first execution failed: %s (%s)%s", resp.GetError(), resp.GetOutcome().GetTerminationReason(), logTail())
	}
	return teardown
}

// startInstance starts a supervisor named name, with its own state
// directory, slots uid ranges from the window's slot firstSlot on, and
// maxConcurrent execution slots, served on a unix socket until stop. grace
// is the graceful-shutdown period. opts adjust the configuration last
// (QueueSize, and the warm pool once supervisor.Config has one).
func startInstance(name string, firstSlot, slots, maxConcurrent int, grace time.Duration, opts ...func(*supervisor.Config)) (*instance, error) {
	return startInstanceOn(name, firstSlot, slots, maxConcurrent, grace, nil, opts...)
}

// startInstanceOn is startInstance with the transport adjusted by tc
// (tokens, say) before it serves; nil = a plain unix socket.
func startInstanceOn(name string, firstSlot, slots, maxConcurrent int, grace time.Duration, tc func(*transport.Config), opts ...func(*supervisor.Config)) (*instance, error) {
	if firstSlot+slots > uidSlots {
		return nil, fmt.Errorf("uid slots %d..%d outside the window", firstSlot, firstSlot+slots)
	}
	in := &instance{stateDir: filepath.Join(host.dir, name)}
	if err := os.Mkdir(in.stateDir, 0o755); err != nil {
		return nil, err
	}
	scripts, err := cache.OpenStore(cache.Config{Dir: filepath.Join(in.stateDir, "scripts")})
	if err != nil {
		return nil, err
	}
	cfg := supervisor.Config{
		Cache:         scripts,
		MaxConcurrent: maxConcurrent,
		Layers:        host.layers,
		Version:       "itest",
		Logger:        host.log.Named(name),
		Sandbox: sandbox.Config{
			WorkerBinary: host.worker,
			StateDir:     in.stateDir,
			Cgroup:       host.cg,
			IDs:          sandbox.NewIDPool(host.uidBase+uint32(firstSlot)*rangeSize, rangeSize, slots),
			Logger:       host.log.Named(name),
			// The default 10 s, in the environment's time.
			StartTimeout: testbin.Scaled(10 * time.Second),
		},
	}
	// The node runtime, from the repository's bundle (make bundle); when it
	// is not installed, node tests fail saying so (requireNode).
	if _, err := supervisor.NodeRuntime(&cfg, repoBundle(), os.Getenv); err != nil && !errors.Is(err, node.ErrNoBundle) {
		return nil, err
	}
	for _, o := range opts {
		o(&cfg)
	}
	if in.srv, err = supervisor.New(cfg); err != nil {
		return nil, err
	}
	in.tc = transport.Config{SocketPath: filepath.Join(in.stateDir, "execfarm.sock")}
	if tc != nil {
		tc(&in.tc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.done = make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		in.done <- supervisor.ListenAndServe(ctx, in.srv, in.tc, grace, func(string) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-in.done:
		cancel()
		return nil, err
	}
	// A server's token file is its list, which no client sends: the
	// instance's own client goes without (tests dial with their token).
	clientTC := in.tc
	clientTC.TokenPath = ""
	if in.conn, err = clientTC.Dial(); err != nil {
		cancel()
		<-in.done
		return nil, err
	}
	in.client = sandboxv1.NewSandboxServiceClient(in.conn)
	return in, nil
}

// stop closes the client connection and shuts the supervisor down (grace
// as given to startInstance); it returns ListenAndServe's error.
func (in *instance) stop() error {
	in.conn.Close()
	in.cancel()
	return <-in.done
}

// dial opens a second client connection to the instance.
func (in *instance) dial(t testing.TB) sandboxv1.SandboxServiceClient {
	t.Helper()
	conn, err := in.tc.Dial()
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return sandboxv1.NewSandboxServiceClient(conn)
}

// logTail returns the end of the suite's supervisor log, for messages.
func logTail() string {
	if host.logFile == nil {
		return ""
	}
	f, err := os.Open(host.logFile.Name())
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	if len(b) == 0 {
		return ""
	}
	return "\nsupervisor log (tail):\n" + string(b)
}

// repoBundle is the node runtime bundle directory of this checkout.
func repoBundle() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "runtime", "node", "bundle")
}
