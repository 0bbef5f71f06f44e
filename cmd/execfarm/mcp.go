package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/mcpbridge"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// mcpMaxConnections bounds the HTTP connections `execfarm mcp --http`
// holds at once: a session's POSTs and its event stream each take one.
const mcpMaxConnections = 4 * mcpbridge.DefaultMaxHTTPSessions

func mcpCmd(cf *clientFlags) *cobra.Command {
	var (
		httpAddr       string
		tokenFile      string
		tlsCert        string
		tlsKey         string
		maxSessions    int
		sessionTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve execfarm to an AI agent over MCP (stdio, or Streamable HTTP with --http)",
		Long: `Serve the Model Context Protocol: the runSandbox tool (modes execute,
stream, async, status, cancel, list, test) and the session sandbox tools of
the Kubernetes agent-sandbox MCP server (create_sandbox, delete_sandbox,
execute_command, upload_file, download_file, list_files, file_exists,
get_sandbox_status, and the get_sandboxes resource); README: MCP.

On stdin/stdout by default: the process serves one client, whose sandboxes
are its own (no other client of the supervisor sees them) and are deleted
when it exits (stdin closed, stdout broken, SIGTERM, SIGINT, SIGHUP). With
--http ADDR, MCP's Streamable HTTP transport at http://ADDR/, or at
https://ADDR/ with --http-tls-cert and --http-tls-key (TLS 1.2 at least;
the certificate and key, in one directory, are re-read every minute, so a
renewed certificate is served without a restart): each bearer token of
--http-token-file is a client of its own, whose sandboxes outlive its
sessions; without tokens each MCP session is a client, whose sandboxes
are deleted when it ends. A non-loopback address needs both tokens and
TLS; a loopback address neither.

It talks to the configured supervisor (flags or SANDBOX_* variables, as
run does); with none configured and none at the default socket, it starts
an embedded supervisor for as long as it runs. Logs go to stderr: stdout
carries the protocol alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			// SIGPIPE is received and dropped: a client gone from stdout
			// then fails the transport's write (EPIPE), which ends the
			// session as a closed stdin does, instead of the signal
			// killing the process before it deletes its sandboxes. It
			// does not end the session by itself: once SIGPIPE is
			// notified, a broken pipe on any descriptor raises it (an
			// embedded supervisor's worker connections too).
			pipes := make(chan os.Signal, 1)
			signal.Notify(pipes, syscall.SIGPIPE)
			defer func() {
				signal.Stop(pipes)
				close(pipes)
			}()
			go func() {
				for range pipes {
				}
			}()
			log := hclog.New(&hclog.LoggerOptions{Name: "execfarm-mcp", Output: os.Stderr, Level: hclog.Info})
			var tokens *transport.TokenSet
			if tokenFile = cmp.Or(tokenFile, os.Getenv("EXECFARM_MCP_TOKEN_FILE")); tokenFile != "" {
				if httpAddr == "" {
					return errors.New("--http-token-file needs --http")
				}
				var err error
				if tokens, err = transport.ReadTokenFile(tokenFile); err != nil {
					return err
				}
			}
			tlsCert, tlsKey = cmp.Or(tlsCert, os.Getenv("EXECFARM_MCP_TLS_CERT")), cmp.Or(tlsKey, os.Getenv("EXECFARM_MCP_TLS_KEY"))
			var cert *transport.ReloadingCertificate
			if tlsCert != "" || tlsKey != "" {
				switch {
				case httpAddr == "":
					return errors.New("--http-tls-cert and --http-tls-key need --http")
				case tlsCert == "":
					return errors.New("--http-tls-key needs --http-tls-cert")
				case tlsKey == "":
					return errors.New("--http-tls-cert needs --http-tls-key")
				}
				var err error
				if cert, err = transport.NewReloadingCertificate(tlsCert, tlsKey, transport.DefaultCertRefresh); err != nil {
					return err
				}
				defer cert.Close()
			}
			if httpAddr != "" {
				// Before the supervisor: a refused address starts nothing.
				lis, err := mcpbridge.ListenHTTP(httpAddr, mcpbridge.HTTPProtection{Tokens: tokens != nil, TLS: cert != nil})
				if err != nil {
					return err
				}
				defer lis.Close()
				scheme := "http"
				return serveMCP(ctx, cf, log, func(b *mcpbridge.Bridge, health healthpb.HealthClient) error {
					// One address holds at most
					// mcpbridge.DefaultHeaderConnsPerAddress of the
					// connections still sending headers.
					guard := mcpbridge.NewHeaderGuard(0)
					srv := &http.Server{
						Handler: guard.Handler(b.HTTPHandler(mcpbridge.HTTPConfig{Tokens: tokens, MaxSessions: maxSessions, SessionTimeout: sessionTimeout,
							Health: health, Logger: log})),
						ConnState: guard.ConnState,
						// Headers within 10 s, a body within
						// mcpbridge.DefaultHTTPBodyTimeout, an idle
						// kept-alive connection for a minute; a request
						// without a valid token closes its connection.
						ReadHeaderTimeout: 10 * time.Second,
						IdleTimeout:       time.Minute,
						MaxHeaderBytes:    64 << 10,
						// Failed handshakes and the like, in the log's format.
						ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
						// HTTP/1.1 only, over TLS too: HTTP/2 would carry
						// up to 250 requests on each connection that
						// mcpMaxConnections counts.
						Protocols: new(http.Protocols),
					}
					srv.Protocols.SetHTTP1(true)
					limited := netutil.LimitListener(guard.Listener(lis), mcpMaxConnections)
					errc := make(chan error, 1)
					if cert != nil {
						// The handshake is bounded by ReadHeaderTimeout.
						srv.TLSConfig = cert.TLSConfig()
						scheme = "https"
						go func() { errc <- srv.ServeTLS(limited, "", "") }()
					} else {
						go func() { errc <- srv.Serve(limited) }()
					}
					log.Info("serving MCP over HTTP", "address", scheme+"://"+lis.Addr().String()+"/",
						"liveness", mcpbridge.LivenessPath, "readiness", mcpbridge.ReadinessPath, "bearer_tokens", tokens != nil, "tls", cert != nil, "max_sessions", maxSessions)
					var err error
					select {
					case err = <-errc:
					case <-ctx.Done():
					}
					// Sessions first (their event streams hold
					// connections), then the server.
					b.Close()
					sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = srv.Shutdown(sctx)
					if errors.Is(err, http.ErrServerClosed) {
						err = nil
					}
					return err
				}, mcpbridge.HTTPScope(randomSecret()))
			}
			key := mcpbridge.NewClientKey()
			return serveMCP(ctx, cf, log, func(b *mcpbridge.Bridge, _ healthpb.HealthClient) error {
				// Run returns when the client closes stdin or ctx ends; a
				// signal is a normal end. A malformed line is answered with
				// a JSON-RPC error and the session goes on (Transport).
				// The session's end deletes its sandboxes (Bridge.Wait).
				err := b.Server.Run(ctx, &mcpbridge.Transport{In: os.Stdin, Out: os.Stdout})
				b.Wait()
				if ctx.Err() != nil {
					return nil
				}
				return err
			}, mcpbridge.StdioScope(key))
		},
	}
	f := cmd.Flags()
	f.StringVar(&httpAddr, "http", "", "serve MCP's Streamable HTTP transport at http://ADDRESS/ (https:// with --http-tls-cert) instead of stdio, e.g. 127.0.0.1:8000 (a non-loopback address needs --http-token-file and --http-tls-cert)")
	f.StringVar(&tokenFile, "http-token-file", "", "bearer tokens MCP clients over HTTP must send, one NAME TOKEN per line as serve's --token-file; each token is a client of its own (env EXECFARM_MCP_TOKEN_FILE)")
	f.StringVar(&tlsCert, "http-tls-cert", "", "serve --http over TLS with this PEM certificate (chain), re-read every minute; needs --http-tls-key in the same directory (env EXECFARM_MCP_TLS_CERT)")
	f.StringVar(&tlsKey, "http-tls-key", "", "the PEM private key of --http-tls-cert (env EXECFARM_MCP_TLS_KEY)")
	f.IntVar(&maxSessions, "max-sessions", mcpbridge.DefaultMaxHTTPSessions, "MCP sessions open at once over HTTP, one bearer token at most a quarter of them; past either a new session is answered 503")
	f.DurationVar(&sessionTimeout, "session-timeout", mcpbridge.DefaultHTTPSessionTimeout, "close an HTTP MCP session idle this long (a session without a token: its sandboxes are deleted)")
	return cmd
}

// serveMCP connects to the supervisor (or embeds one), builds the bridge
// with scope, and runs serve with it; the supervisor connection outlives
// serve, so that the sandboxes of ended sessions can be deleted.
func serveMCP(ctx context.Context, cf *clientFlags, log hclog.Logger, serve func(*mcpbridge.Bridge, healthpb.HealthClient) error, scope func(mcp.Request) (mcpbridge.Scope, error)) error {
	// An embedded supervisor stops when closeFn runs, after the clean-up,
	// not when a signal ends ctx.
	conn, closeFn, err := cf.dialOrEmbed(context.WithoutCancel(ctx), true)
	if err != nil {
		return err
	}
	defer closeFn()
	b, err := mcpbridge.New(mcpbridge.Config{
		Executions: sandboxv1.NewSandboxServiceClient(conn), Sessions: execfarmv1.NewSessionServiceClient(conn),
		Version: version, Scope: scope, Logger: log,
	})
	if err != nil {
		return err
	}
	return serve(b, healthpb.NewHealthClient(conn))
}

// randomSecret returns 32 random bytes: the HTTP bridge's secret for the
// keys of its sessions' clients.
func randomSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return b
}
