package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/client"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// clientFlags locate the supervisor; they mirror the server's flags and
// fall back to the same environment variables.
type clientFlags struct {
	socket string
	tcp    bool
	host   string
	port   int
	token  string // file
	flags  *pflag.FlagSet
}

func (c *clientFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	c.flags = f
	f.StringVar(&c.socket, "socket", "", "supervisor unix socket (env SANDBOX_SOCKET_PATH; default "+transport.DefaultSocketPath+")")
	f.BoolVar(&c.tcp, "tcp", false, "use TCP instead of the unix socket (env SANDBOX_USE_TCP; default: TCP when a host or a port is given, by flag or environment)")
	f.StringVar(&c.host, "host", "", "TCP host (env SANDBOX_TCP_HOST)")
	f.IntVar(&c.port, "port", 0, "TCP port (env SANDBOX_TCP_PORT; default 50051)")
	f.StringVar(&c.token, "token-file", "", "send the bearer token in this file (env EXECFARM_TOKEN_FILE, or the token itself in EXECFARM_TOKEN)")
}

// options are the client package's options for the flags: the flags'
// values, the environment filling in the rest (client.Config,
// transport.FromEnv).
func (c *clientFlags) options(mode client.Mode) client.Options {
	tc := transport.Config{SocketPath: c.socket, UseTCP: c.tcp, TCPHost: c.host, TCPPort: c.port, TokenPath: c.token}
	if c.flags != nil {
		flagsChooseTransport(c.flags, &tc)
	}
	return client.Options{Transport: tc, Mode: mode, Embed: client.EmbedOptions{Version: version}}
}

func (c *clientFlags) transport() (transport.Config, error) {
	return client.Config(c.options(client.Server))
}

// flagsChooseTransport lets the flags choose between the unix socket and
// TCP before the environment may (README, "Flags first"): --tcp given
// (--tcp=false too) decides; else --host or --port means TCP; else
// --socket means the socket. With none of them, transport.FromEnv infers
// it from SANDBOX_USE_TCP, SANDBOX_TCP_HOST and SANDBOX_TCP_PORT, as
// ProDisco does.
func flagsChooseTransport(f *pflag.FlagSet, tc *transport.Config) {
	// Flag.Changed, not FlagSet.Changed: a persistent flag is parsed by
	// the subcommand's set, which shares the Flag but not the record.
	changed := func(name string) bool {
		fl := f.Lookup(name)
		return fl != nil && fl.Changed
	}
	switch {
	case changed("tcp"):
		tc.UseTCPSet = true
	case changed("host") || changed("port"):
		tc.UseTCP, tc.UseTCPSet = true, true
	case changed("socket"):
		tc.UseTCP, tc.UseTCPSet = false, true
	}
}

// open connects to the supervisor as mode says (client.Connect). An
// embedded supervisor that cannot start is execfarm's failure (exit 125);
// a connection that cannot be set up goes through reach.
func (c *clientFlags) open(ctx context.Context, mode client.Mode) (*client.Client, error) {
	opts := c.options(mode)
	cl, err := client.Connect(ctx, opts)
	if err != nil {
		var ee *client.EmbedError
		if errors.As(err, &ee) {
			return nil, failure{err}
		}
		if tc, terr := client.Config(opts); terr == nil {
			return nil, reach(tc, err)
		}
		return nil, err
	}
	return cl, nil
}

// connect dials the configured supervisor (the default socket when
// nothing is configured). The client's calls that find no supervisor
// answer UNAVAILABLE; the commands pass their errors through c.reach.
func (c *clientFlags) connect() (sandboxv1.SandboxServiceClient, func(), error) {
	cl, err := c.open(context.Background(), client.Server)
	if err != nil {
		return nil, nil, err
	}
	return cl.Executions(), func() { cl.Close() }, nil
}

// call runs f with a client of the configured supervisor, then closes
// the connection. f's error goes through reach.
func (c *clientFlags) call(f func(sandboxv1.SandboxServiceClient) error) error {
	client, closeFn, err := c.connect()
	if err != nil {
		return err
	}
	defer closeFn()
	return c.reach(f(client))
}

// reach is the package's reach with the configured supervisor's address.
func (c *clientFlags) reach(err error) error {
	if err == nil {
		return nil
	}
	tc, terr := c.transport()
	if terr != nil {
		return err
	}
	return reach(tc, err)
}

// connectOrEmbed dials the configured supervisor; with none configured and
// nothing listening at the default socket, it starts an embedded
// supervisor on a private socket, which the returned stop shuts down. An
// embedded supervisor that cannot start is execfarm's failure (exit 125).
func (c *clientFlags) connectOrEmbed(ctx context.Context, verbose bool) (sandboxv1.SandboxServiceClient, func(), error) {
	conn, stop, err := c.dialOrEmbed(ctx, verbose)
	if err != nil {
		return nil, nil, err
	}
	return sandboxv1.NewSandboxServiceClient(conn), stop, nil
}

// dialOrEmbed is connectOrEmbed's connection, for clients of several
// services: client.Connect in client.Auto mode.
func (c *clientFlags) dialOrEmbed(ctx context.Context, verbose bool) (*grpc.ClientConn, func(), error) {
	cl, err := c.open(ctx, client.Auto)
	if err != nil {
		return nil, nil, err
	}
	if verbose && cl.Embedded() {
		fmt.Fprintln(os.Stderr, "execfarm: no supervisor configured; started an embedded one at", cl.Address())
		for _, n := range supervisor.HostCeilingNotes(limits.DefaultCeilings()) {
			fmt.Fprintln(os.Stderr, "execfarm:", n)
		}
	}
	return cl.Conn(), func() { _ = cl.Close() }, nil
}

// connectNoEmbed dials the configured supervisor, or the one at the
// default socket; with neither it refuses, saying why an embedded one
// would not do (why).
func (c *clientFlags) connectNoEmbed(why string) (sandboxv1.SandboxServiceClient, func(), error) {
	tc, err := c.transport()
	if err != nil {
		return nil, nil, err
	}
	if !tc.Configured() && !client.DefaultSocketAnswers() {
		return nil, nil, &unreachableError{addr: tc.Address(), err: errors.New(why)}
	}
	return c.connect()
}

// reach returns err, or, when it says no supervisor answered at tc
// (UNAVAILABLE without the ErrorInfo a supervisor's own refusals carry,
// such as SHUTTING_DOWN or TRANSFORM_HELPER_FAILED), an *unreachableError.
func reach(tc transport.Config, err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || reason(st) != "" {
		return err
	}
	return &unreachableError{addr: tc.Address(), err: err}
}

// reason is the ErrorInfo reason of st, a supervisor's own answer; "" for
// none (a connection that failed carries none).
func reason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// describe renders an error for a person: gRPC errors as "CODE: message",
// with the code's wire name (INVALID_ARGUMENT, from google.rpc.Code).
func describe(err error) string {
	var un *unreachableError
	if !errors.As(err, &un) {
		if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
			return fmt.Sprintf("%s: %s", code.Code(st.Code()), st.Message())
		}
	}
	return err.Error()
}
