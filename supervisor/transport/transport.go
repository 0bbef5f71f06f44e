package transport

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultSocketPath is the supervisor's unix socket when none is configured.
const DefaultSocketPath = "/run/execfarm/execfarm.sock"

// MaxResponseBytes is the largest response a client accepts, bytes:
// grpc-go's default of 4 MiB is less than one execution's output may be
// (two streams up to the server's 64 MiB ceiling each, plus 8 MiB of test
// results), and a response over it would be lost whole.
const MaxResponseBytes = 256 << 20

// DefaultTCPPort is the reference server's TCP port.
const DefaultTCPPort = 50051

// Transport security modes (SANDBOX_TRANSPORT_MODE).
const (
	ModeInsecure = "insecure"
	ModeTLS      = "tls"
	ModeMTLS     = "mtls"
)

// ErrInsecureRemote is returned when insecure TCP would listen on a
// non-loopback address without AllowInsecureRemote.
var ErrInsecureRemote = errors.New("transport: insecure TCP on a non-loopback address needs --allow-insecure-tcp")

// Config locates the supervisor. The zero value is a unix socket at
// DefaultSocketPath, insecure (file permissions protect it).
type Config struct {
	// SocketPath is the unix socket; "" = DefaultSocketPath.
	SocketPath string
	// UseTCP selects TCP instead of the unix socket. FromEnv infers it,
	// as ProDisco's server and client do, unless UseTCPSet.
	UseTCP bool
	// UseTCPSet says UseTCP was given (a flag, --tcp=false included):
	// FromEnv then leaves it as it is.
	UseTCPSet bool
	// TCPHost is the host to bind (server, "" = 127.0.0.1) or to connect
	// to (client, "" = localhost).
	TCPHost string
	// TCPPort is the TCP port; 0 = DefaultTCPPort.
	TCPPort int
	// Mode is ModeInsecure ("" too), ModeTLS or ModeMTLS.
	Mode string
	// CertPath and KeyPath are the server's certificate and key (tls, mtls).
	CertPath, KeyPath string
	// CAPath verifies the peer: the server's certificate (client side) or
	// client certificates (server side, mtls).
	CAPath string
	// ClientCertPath and ClientKeyPath are the client's certificate (mtls).
	ClientCertPath, ClientKeyPath string
	// ServerName overrides the name verified in the server's certificate.
	ServerName string
	// CertRefresh is how often a server re-reads its certificate, key and
	// client CA (reload.go); 0 = DefaultCertRefresh (1 minute).
	CertRefresh time.Duration
	// AllowInsecureRemote permits insecure TCP on non-loopback addresses.
	AllowInsecureRemote bool
	// TokenPath is a file of bearer tokens, each with the name of its
	// principal (format: Config.tokens; a one-token file names its token
	// "default"), Token one token itself, named "default" (TokenPath
	// wins). A server with tokens refuses calls without one of them
	// (UNAUTHENTICATED; grpc.health.v1 excepted) and gives each call its
	// token's principal; a client sends its one token.
	TokenPath, Token string
	// MaxConnections, MaxConnectionsPerPeer, ReservedConnections and
	// ReservedConnectionsPerPeer bound a server's connections
	// (ListenServer); 0 = DefaultMaxConnections,
	// DefaultMaxConnectionsPerPeer, DefaultReservedConnections,
	// DefaultReservedConnectionsPerPeer.
	MaxConnections, MaxConnectionsPerPeer, ReservedConnections, ReservedConnectionsPerPeer int
	// ReceiveBudget and ReceiveBudgetPerConnection bound the request
	// bytes a server is receiving, in all and per connection (limits.go);
	// 0 = DefaultReceiveBudget, DefaultReceiveBudgetPerConnection. Each
	// must take one MaxRequestBytes message, and the first its second.
	ReceiveBudget, ReceiveBudgetPerConnection int64
}

// FromEnv reads the reference server's variables through getenv (os.Getenv
// in production). Values already set in c (from flags) win. Whether to use
// TCP is decided as ProDisco's server and client decide it: UseTCP when
// true or UseTCPSet; else SANDBOX_USE_TCP when set ("true" or "1" for
// TCP, anything else for the unix socket); else TCP when a host or a port
// is given, by c or by SANDBOX_TCP_HOST or SANDBOX_TCP_PORT.
func FromEnv(c Config, getenv func(string) string) (Config, error) {
	if c.SocketPath == "" {
		c.SocketPath = getenv("SANDBOX_SOCKET_PATH")
	}
	if c.TCPHost == "" {
		c.TCPHost = getenv("SANDBOX_TCP_HOST")
	}
	if v := getenv("SANDBOX_TCP_PORT"); v != "" && c.TCPPort == 0 {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return c, fmt.Errorf("transport: SANDBOX_TCP_PORT %q is not a port number", v)
		}
		c.TCPPort = p
	}
	if !c.UseTCP && !c.UseTCPSet {
		if v := getenv("SANDBOX_USE_TCP"); v != "" {
			c.UseTCP = v == "1" || strings.EqualFold(v, "true")
		} else {
			c.UseTCP = c.TCPHost != "" || c.TCPPort != 0
		}
	}
	set := func(dst *string, key string) {
		if *dst == "" {
			*dst = getenv(key)
		}
	}
	set(&c.Mode, "SANDBOX_TRANSPORT_MODE")
	set(&c.CertPath, "SANDBOX_TLS_CERT_PATH")
	set(&c.KeyPath, "SANDBOX_TLS_KEY_PATH")
	set(&c.CAPath, "SANDBOX_TLS_CA_PATH")
	set(&c.ClientCertPath, "SANDBOX_TLS_CLIENT_CERT_PATH")
	set(&c.ClientKeyPath, "SANDBOX_TLS_CLIENT_KEY_PATH")
	set(&c.ServerName, "SANDBOX_TLS_SERVER_NAME")
	set(&c.TokenPath, "EXECFARM_TOKEN_FILE")
	set(&c.Token, "EXECFARM_TOKEN")
	switch c.Mode {
	case "", ModeInsecure, ModeTLS, ModeMTLS:
	default:
		return c, fmt.Errorf("transport: SANDBOX_TRANSPORT_MODE %q is not insecure, tls or mtls", c.Mode)
	}
	return c, nil
}

// Configured reports whether anything points away from the defaults, that
// is whether a client must not fall back to an embedded supervisor.
func (c Config) Configured() bool {
	return c.SocketPath != "" || c.UseTCP
}

func (c Config) socketPath() string {
	if c.SocketPath == "" {
		return DefaultSocketPath
	}
	return c.SocketPath
}

func (c Config) port() int {
	if c.TCPPort == 0 {
		return DefaultTCPPort
	}
	return c.TCPPort
}

// Address returns a human-readable address: "unix:///path" or "host:port".
func (c Config) Address() string {
	if !c.UseTCP {
		return "unix://" + c.socketPath()
	}
	host := c.TCPHost
	if host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(c.port()))
}

// Listen opens the server's listener. A unix socket's stale file is
// replaced and the socket is made mode 0660.
func (c Config) Listen() (net.Listener, error) {
	if c.UseTCP {
		host := c.TCPHost
		if host == "" {
			host = "127.0.0.1"
		}
		if c.Mode == "" || c.Mode == ModeInsecure {
			if !isLoopback(host) && !c.AllowInsecureRemote {
				return nil, fmt.Errorf("%w (host %q)", ErrInsecureRemote, host)
			}
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(c.port())))
		if err != nil {
			return nil, fmt.Errorf("transport: listen: %w", err)
		}
		return l, nil
	}
	p := c.socketPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("transport: %s exists and is not a socket", p)
		}
		if conn, err := net.Dial("unix", p); err == nil {
			conn.Close()
			return nil, fmt.Errorf("transport: a server already listens on %s", p)
		}
		_ = os.Remove(p)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("transport: listen: %w", err)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		l.Close()
		return nil, fmt.Errorf("transport: %w", err)
	}
	return l, nil
}

// ListenServer opens the server's listener (Listen), bounded, and returns
// it with the server options that go with the bounds (ServerSecurity gives
// the others): at most MaxConnections connections (DefaultMaxConnections,
// and at most half the process's RLIMIT_NOFILE), MaxConnectionsPerPeer per
// peer, with tokens ReservedConnections kept for callers that
// authenticate, and the per-connection bounds of guard.go (streams,
// handshake time, idle time, keepalive enforcement, unauthenticated
// health calls) and the receive budget (ReceiveBudget, limits.go).
// Transient accept errors (EMFILE...) are waited out,
// never returned.
func (c Config) ListenServer() (net.Listener, []grpc.ServerOption, error) {
	tokens, err := c.tokens()
	if err != nil {
		return nil, nil, err
	}
	var set *TokenSet
	if len(tokens) > 0 {
		set = newTokenSet(tokens)
	}
	recv := &recvBudget{max: cmp.Or(c.ReceiveBudget, DefaultReceiveBudget), perConn: cmp.Or(c.ReceiveBudgetPerConnection, DefaultReceiveBudgetPerConnection)}
	if recv.perConn < MaxRequestBytes || recv.max < recv.perConn {
		return nil, nil, fmt.Errorf("transport: a receive budget of %d bytes, %d per connection, cannot take one request of %d bytes", recv.max, recv.perConn, MaxRequestBytes)
	}
	g := newGuard(cmpOr(c.MaxConnections, DefaultMaxConnections), cmpOr(c.MaxConnectionsPerPeer, DefaultMaxConnectionsPerPeer),
		cmpOr(c.ReservedConnections, DefaultReservedConnections), cmpOr(c.ReservedConnectionsPerPeer, DefaultReservedConnectionsPerPeer), set, recv)
	l, err := c.Listen()
	if err != nil {
		return nil, nil, err
	}
	return &guardListener{Listener: l, g: g}, g.serverOptions(), nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServerSecurity is a server's transport security: its gRPC options and
// what they hold. Close it once the server has stopped.
type ServerSecurity struct {
	// Options go to grpc.NewServer: the TLS credentials (tls, mtls), the
	// token check and the principal of each call.
	Options []grpc.ServerOption
	tls     *serverTLS // nil in insecure mode
}

// CertificateNotAfter returns when the certificate served now expires;
// ok is false in insecure mode (or when the certificate cannot be read,
// which a started server never sees).
func (s *ServerSecurity) CertificateNotAfter() (notAfter time.Time, ok bool) {
	if s == nil || s.tls == nil {
		return time.Time{}, false
	}
	t, err := s.tls.notAfter()
	return t, err == nil
}

// Close stops re-reading the certificates. Connections still open keep
// theirs.
func (s *ServerSecurity) Close() {
	if s != nil && s.tls != nil {
		s.tls.provider.Close()
	}
}

// ServerSecurity returns the server's transport security for c's mode
// and tokens. Every call but grpc.health.v1's gets its caller's principal
// in its context (package principal): its token's, else its verified
// client certificate's subject, else the local principal. With tls or
// mtls, the certificate, its key and (mtls) the client CA are checked now
// and re-read every CertRefresh while the server runs (reload.go); the
// certificate and its key must be in one directory.
func (c Config) ServerSecurity() (*ServerSecurity, error) {
	tokens, err := c.tokens()
	if err != nil {
		return nil, err
	}
	sec := &ServerSecurity{}
	if len(tokens) > 0 {
		sec.Options = tokenOptions(newTokenSet(tokens))
	}
	sec.Options = append(sec.Options, principalOptions()...)
	switch c.Mode {
	case "", ModeInsecure:
		// Insecure credentials hand gRPC the connection as it is; the
		// wrapper makes it a framedConn (request limits, limits.go).
		sec.Options = append(sec.Options, grpc.Creds(framingCreds{insecure.NewCredentials()}))
		return sec, nil
	}
	base := serverTLSBase()
	files := keyFiles{cert: c.CertPath, key: c.KeyPath}
	if c.Mode == ModeMTLS {
		if c.CAPath == "" {
			return nil, errors.New("transport: mtls needs the client CA (SANDBOX_TLS_CA_PATH)")
		}
		files.ca = c.CAPath
		base.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if sec.tls, err = newServerTLS(base, files, cmp.Or(c.CertRefresh, DefaultCertRefresh)); err != nil {
		return nil, err
	}
	sec.Options = append(sec.Options, grpc.Creds(framingCreds{sec.tls.creds}))
	return sec, nil
}

// DialOptions returns the client's gRPC dial options for c's mode and
// token. With tls or mtls, the CA and (mtls) the client certificate are
// checked now and read again at every handshake, so a new connection
// uses the files of that moment (reload.go).
func (c Config) DialOptions() ([]grpc.DialOption, error) {
	token, err := c.clientToken()
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxResponseBytes))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	switch c.Mode {
	case "", ModeInsecure:
		return append(opts, grpc.WithTransportCredentials(insecure.NewCredentials())), nil
	}
	files := keyFiles{ca: c.CAPath}
	if c.Mode == ModeMTLS {
		files.cert, files.key = c.ClientCertPath, c.ClientKeyPath
	}
	creds, err := clientTLS(&tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}, files)
	if err != nil {
		return nil, err
	}
	return append(opts, grpc.WithTransportCredentials(creds)), nil
}

// Target returns the gRPC dial target for c: "unix:///abs/path",
// "unix:rel/path" (grpc's form for a relative socket path), or
// "dns:///host:port".
func (c Config) Target() string {
	if !c.UseTCP {
		if p := c.socketPath(); !filepath.IsAbs(p) {
			return "unix:" + p
		}
		return "unix://" + c.socketPath()
	}
	return "dns:///" + c.Address()
}

// Dial opens a client connection to the supervisor (lazily: the first RPC
// connects).
func (c Config) Dial() (*grpc.ClientConn, error) {
	opts, err := c.DialOptions()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(c.Target(), opts...)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", c.Address(), err)
	}
	return conn, nil
}
