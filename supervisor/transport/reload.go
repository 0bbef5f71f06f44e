package transport

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
)

// Certificates are re-read from their files while the process runs, so
// that a certificate renewed on disk (cert-manager renews before expiry,
// and the kubelet swaps the secret volume's files at once) is used by the
// next connection without a restart:
//
//   - A server holds a pemfile provider (grpc-go's
//     credentials/tls/certprovider/pemfile): it re-reads the certificate,
//     its key and, with mtls, the client CA every CertRefresh, and keeps
//     the last good material while the files are half-written or broken.
//     Each TLS handshake takes what the provider holds then.
//   - A client reads its certificate, key and CA at each handshake, that
//     is at each new connection: a client needs them only then, and has no
//     lifetime to stop a watcher in (grpc.ClientConn has no close hook).
//
// In both, crypto/tls verifies the peer with the material of that moment:
// a rotated CA is trusted from the next connection on, and connections
// already made keep the certificates they were made with.

// DefaultCertRefresh is how often a server re-reads its certificate, key
// and client CA when Config.CertRefresh is zero. The kubelet updates a
// mounted secret within about a minute of its change, and cert-manager
// renews weeks before expiry.
const DefaultCertRefresh = time.Minute

// materialWait bounds a handshake's wait for the provider's material: it
// has some from the start (checked when the server is made), so the wait
// is for a lock, never for a file.
const materialWait = 5 * time.Second

// reloadingTLS is TLS transport credentials whose certificates and CA
// come from material at each handshake; everything else comes from base.
type reloadingTLS struct {
	base     *tls.Config
	server   bool
	material func(context.Context) (*certprovider.KeyMaterial, error)
}

// current returns TLS credentials with the material of this moment.
func (r *reloadingTLS) current(ctx context.Context) (credentials.TransportCredentials, error) {
	km, err := r.material(ctx)
	if err != nil {
		return nil, fmt.Errorf("transport: certificates: %w", err)
	}
	cfg := r.base.Clone()
	cfg.Certificates = km.Certs
	if r.server {
		cfg.ClientCAs = km.Roots
	} else if km.Roots != nil {
		cfg.RootCAs = km.Roots
	}
	return credentials.NewTLS(cfg), nil
}

func (r *reloadingTLS) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, err := r.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.ClientHandshake(ctx, authority, conn)
}

func (r *reloadingTLS) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), materialWait)
	defer cancel()
	c, err := r.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.ServerHandshake(conn)
}

func (r *reloadingTLS) Info() credentials.ProtocolInfo { return credentials.NewTLS(r.base).Info() }

func (r *reloadingTLS) Clone() credentials.TransportCredentials {
	c := *r
	c.base = r.base.Clone()
	return &c
}

// OverrideServerName sets the name a client verifies (deprecated in
// grpc-go, kept by its interface).
func (r *reloadingTLS) OverrideServerName(name string) error {
	r.base.ServerName = name
	return nil
}

// keyFiles names a certificate with its key (both "" = none) and a CA
// bundle ("" = none).
type keyFiles struct {
	cert, key, ca string
}

// load reads and checks the files: the certificate must match its key,
// and the CA bundle must hold at least one certificate.
func (f keyFiles) load() (*certprovider.KeyMaterial, error) {
	km := &certprovider.KeyMaterial{}
	if f.cert != "" || f.key != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("transport: load certificate %s with key %s: %w", f.cert, f.key, err)
		}
		km.Certs = []tls.Certificate{cert}
	}
	if f.ca != "" {
		pool, err := loadPool(f.ca)
		if err != nil {
			return nil, err
		}
		km.Roots = pool
	}
	return km, nil
}

// clientTLS returns a client's credentials: files are read at every
// handshake.
func clientTLS(base *tls.Config, f keyFiles) (credentials.TransportCredentials, error) {
	if _, err := f.load(); err != nil { // refuse bad files at once, not at the first call
		return nil, err
	}
	return &reloadingTLS{base: base, material: func(context.Context) (*certprovider.KeyMaterial, error) { return f.load() }}, nil
}

// serverTLS is a server's reloading credentials and the provider behind
// them.
type serverTLS struct {
	creds    *reloadingTLS
	provider certprovider.Provider
}

// newServerTLS checks the files, then starts a pemfile provider that
// re-reads them every refresh. Close stops it.
func newServerTLS(base *tls.Config, f keyFiles, refresh time.Duration) (*serverTLS, error) {
	if _, err := f.load(); err != nil {
		return nil, err
	}
	if filepath.Dir(f.cert) != filepath.Dir(f.key) {
		// pemfile reads the two together from one directory, which a
		// secret volume or cert-manager swaps at once.
		return nil, fmt.Errorf("transport: certificate %s and key %s must be in one directory to be reloaded", f.cert, f.key)
	}
	p, err := pemfile.NewProvider(pemfile.Options{CertFile: f.cert, KeyFile: f.key, RootFile: f.ca, RefreshDuration: refresh})
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	return &serverTLS{creds: &reloadingTLS{base: base, server: true, material: p.KeyMaterial}, provider: p}, nil
}

// notAfter returns when the certificate served now expires.
func (s *serverTLS) notAfter() (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), materialWait)
	defer cancel()
	km, err := s.provider.KeyMaterial(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if len(km.Certs) == 0 || len(km.Certs[0].Certificate) == 0 {
		return time.Time{}, errors.New("transport: no serving certificate")
	}
	leaf := km.Certs[0].Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(km.Certs[0].Certificate[0]); err != nil {
			return time.Time{}, err
		}
	}
	return leaf.NotAfter, nil
}

// ReloadingCertificate is a server certificate and its key re-read from
// their files while the server runs, for a TLS server other than the gRPC
// one (MCP over HTTPS): the pemfile provider of ServerSecurity, with its
// rules (checked at start, re-read every refresh, the last good pair kept
// while the files are half-written or broken, both files in one
// directory). Close it once the server has stopped.
type ReloadingCertificate struct {
	s *serverTLS
}

// NewReloadingCertificate checks certFile (PEM, the leaf first) and
// keyFile (PEM) now, that they match and lie in one directory, and starts
// re-reading them every refresh (0 = DefaultCertRefresh). It returns an
// error for a missing or unreadable file, a mismatched pair or two
// directories.
func NewReloadingCertificate(certFile, keyFile string, refresh time.Duration) (*ReloadingCertificate, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("transport: a reloading certificate needs a certificate file and a key file")
	}
	s, err := newServerTLS(serverTLSBase(), keyFiles{cert: certFile, key: keyFile}, cmp.Or(refresh, DefaultCertRefresh))
	if err != nil {
		return nil, err
	}
	return &ReloadingCertificate{s: s}, nil
}

// GetCertificate returns the certificate and key held now; it is a
// tls.Config's GetCertificate, called at each handshake. It waits at most
// a few seconds for the provider (a lock: it holds a pair from the start).
func (c *ReloadingCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	ctx := context.Background()
	if hello != nil {
		ctx = hello.Context()
	}
	ctx, cancel := context.WithTimeout(ctx, materialWait)
	defer cancel()
	km, err := c.s.provider.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("transport: certificates: %w", err)
	}
	if len(km.Certs) == 0 {
		return nil, errors.New("transport: no serving certificate")
	}
	cert := km.Certs[0]
	return &cert, nil
}

// TLSConfig returns a new server tls.Config with ServerSecurity's base
// (TLS 1.2 at least) whose certificate is GetCertificate's.
func (c *ReloadingCertificate) TLSConfig() *tls.Config {
	cfg := serverTLSBase()
	cfg.GetCertificate = c.GetCertificate
	return cfg
}

// Close stops re-reading the files. Connections already made keep their
// certificate; a later handshake fails.
func (c *ReloadingCertificate) Close() {
	c.s.provider.Close()
}

// serverTLSBase is what every TLS server of execfarm starts from; the
// certificates come from a provider at each handshake.
func serverTLSBase() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transport: read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("transport: no certificate in %s", path)
	}
	return pool, nil
}
