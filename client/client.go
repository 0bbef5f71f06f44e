package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// Mode chooses between a running supervisor and an embedded one.
type Mode int

const (
	// Auto: the configured supervisor (Options.Transport or the
	// environment name a socket or a TCP address), else one answering at
	// transport.DefaultSocketPath, else an embedded one.
	Auto Mode = iota
	// Server: the configured supervisor, or the default socket's; never
	// an embedded one.
	Server
	// Embedded: always an embedded supervisor, whatever is configured.
	Embedded
)

// Options configure Connect. The zero value reads the environment and
// embeds a supervisor when none is configured.
type Options struct {
	// Transport holds the values given explicitly (a CLI's flags); the
	// environment fills in the rest with transport.FromEnv:
	// SANDBOX_SOCKET_PATH, SANDBOX_USE_TCP, SANDBOX_TCP_HOST,
	// SANDBOX_TCP_PORT, SANDBOX_TRANSPORT_MODE, SANDBOX_TLS_*,
	// EXECFARM_TOKEN_FILE, EXECFARM_TOKEN. Set UseTCPSet when UseTCP
	// (true or false) was chosen and the environment must not change it.
	Transport transport.Config
	// Getenv reads the environment; nil = os.Getenv. func(string) string
	// { return "" } ignores it.
	Getenv func(string) string
	// Mode chooses the supervisor; Auto by default.
	Mode Mode
	// Embed configures an embedded supervisor.
	Embed EmbedOptions
}

// EmbedOptions configure an embedded supervisor: one that runs inside
// this process (supervisor.EmbeddedWith) on a unix socket in a fresh
// directory of its own, with its own state directory, cgroup parent and a
// uid window no other supervisor on the host holds, accepting only a
// token generated for it (24 random bytes, hex). Close stops it and
// removes all of that. It needs what `execfarm serve` needs: root, user
// namespaces and cgroup v2 (execfarm doctor says what a host lacks).
type EmbedOptions struct {
	// Worker is the execfarm-worker binary; "" = supervisor.FindWorker
	// ($EXECFARM_WORKER, next to this executable, $PATH).
	Worker string
	// Version is what its HealthCheck reports.
	Version string
	// Logger receives its log; nil = warnings and errors on stderr, or the
	// level EXECFARM_LOG_LEVEL names.
	Logger hclog.Logger
	// AllowDegraded lists isolation layers it may start without (serve's
	// --allow-degraded).
	AllowDegraded []string
	// Configure, when set, changes its configuration before it starts.
	Configure func(*supervisor.Config)
}

// EmbedError is an embedded supervisor that could not start: what the
// host lacks (root, user namespaces, cgroups), or a missing binary.
type EmbedError struct{ Err error }

func (e *EmbedError) Error() string {
	return "start embedded supervisor: " + e.Err.Error() +
		" (an embedded supervisor needs what `execfarm serve` needs: root, user namespaces and cgroup v2; or point SANDBOX_SOCKET_PATH, or SANDBOX_TCP_HOST and SANDBOX_TCP_PORT, at a running execfarm serve)"
}

func (e *EmbedError) Unwrap() error { return e.Err }

// Client is a connection to one supervisor, running or embedded. Its
// methods may be called from several goroutines at once. Close it.
type Client struct {
	conn     *grpc.ClientConn
	tc       transport.Config
	exec     sandboxv1.SandboxServiceClient
	sess     execfarmv1.SessionServiceClient
	embedded bool
	stop     func() error // nil unless embedded
}

// Config returns the transport configuration Connect would use with opts:
// opts.Transport completed from the environment.
func Config(opts Options) (transport.Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return transport.FromEnv(opts.Transport, getenv)
}

// Connect connects to a supervisor as opts.Mode says. In server mode the
// connection is made lazily: a supervisor that does not answer shows in
// the first call, as an *UnavailableError whose Unreachable is true. An
// embedded supervisor that cannot start is an *EmbedError. ctx bounds
// the set-up only: an embedded supervisor runs until Close.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	tc, err := Config(opts)
	if err != nil {
		return nil, err
	}
	if opts.Mode == Server || (opts.Mode == Auto && (tc.Configured() || DefaultSocketAnswers())) {
		return dial(tc)
	}
	return embed(ctx, opts.Embed)
}

func dial(tc transport.Config) (*Client, error) {
	conn, err := tc.Dial()
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, tc: tc, exec: sandboxv1.NewSandboxServiceClient(conn), sess: execfarmv1.NewSessionServiceClient(conn)}, nil
}

// DefaultSocketAnswers reports whether a supervisor listens at
// transport.DefaultSocketPath (within 200 ms): Auto mode's test.
func DefaultSocketAnswers() bool {
	conn, err := net.DialTimeout("unix", transport.DefaultSocketPath, 200*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// embed starts an embedded supervisor and connects to it.
func embed(ctx context.Context, eo EmbedOptions) (*Client, error) {
	worker, err := supervisor.FindWorker(eo.Worker)
	if err != nil {
		return nil, &EmbedError{err}
	}
	log := eo.Logger
	if log == nil {
		// Its lifecycle is its client's: only warnings are news, unless
		// EXECFARM_LOG_LEVEL asks for more (debug: its start too).
		level := hclog.LevelFromString(os.Getenv("EXECFARM_LOG_LEVEL"))
		if level == hclog.NoLevel {
			level = hclog.Warn
		}
		log = hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: level})
	}
	cfg := supervisor.Config{Version: eo.Version, Logger: log}
	cfg.Sandbox.WorkerBinary = worker
	cfg.Sandbox.GojaBinary = os.Getenv("EXECFARM_GOJA")
	if _, err := supervisor.NodeRuntime(&cfg, "", os.Getenv); err != nil {
		return nil, &EmbedError{err}
	}
	if eo.Configure != nil {
		eo.Configure(&cfg)
	}
	token, err := newToken()
	if err != nil {
		return nil, &EmbedError{err}
	}
	tc, stop, err := supervisor.EmbeddedWith(context.WithoutCancel(ctx), cfg, supervisor.EmbeddedOptions{AllowDegraded: eo.AllowDegraded, Token: token})
	if err != nil {
		return nil, &EmbedError{err}
	}
	c, err := dial(tc)
	if err != nil {
		_ = stop()
		return nil, &EmbedError{err}
	}
	c.embedded, c.stop = true, stop
	return c, nil
}

// newToken is an embedded supervisor's bearer token: 24 random bytes, hex.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Close closes the connection and stops an embedded supervisor (its
// executions and sandboxes end; everything it created is removed).
func (c *Client) Close() error {
	err := c.conn.Close()
	if c.stop != nil {
		err = errors.Join(err, c.stop())
		c.stop = nil
	}
	return err
}

// Embedded reports whether the supervisor is an embedded one.
func (c *Client) Embedded() bool { return c.embedded }

// Address is the supervisor's address, "unix:///path" or "host:port".
func (c *Client) Address() string { return c.tc.Address() }

// Transport is the configuration the client connected with (an embedded
// supervisor's socket and token).
func (c *Client) Transport() transport.Config { return c.tc }

// Conn is the gRPC connection, for services the package does not wrap.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Executions is the raw prodisco.sandbox.v1 stub on the connection.
// Its errors are gRPC statuses, not the package's types.
func (c *Client) Executions() sandboxv1.SandboxServiceClient { return c.exec }

// Sessions is the raw execfarm.v1 SessionService stub on the connection.
func (c *Client) Sessions() execfarmv1.SessionServiceClient { return c.sess }

// HealthClient is the grpc.health.v1 stub on the connection.
func (c *Client) HealthClient() healthpb.HealthClient { return healthpb.NewHealthClient(c.conn) }

// Health is the supervisor's HealthCheck.
func (c *Client) Health(ctx context.Context) (*sandboxv1.HealthCheckResponse, error) {
	resp, err := c.exec.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
	return resp, c.wrap(err)
}

// wrap is wrapError with the client's address.
func (c *Client) wrap(err error) error { return wrapError(err, c.tc.Address()) }

// WrapError maps an error of a raw stub's call (Executions, Sessions) to
// the package's error types, as the package's own calls do.
func (c *Client) WrapError(err error) error { return c.wrap(err) }

func errorf(format string, args ...any) error { return fmt.Errorf("client: "+format, args...) }
