package mcpbridge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/testcert"
)

// TestListenHTTPNeedsTokensAndTLSOffLoopback: a non-loopback address is
// refused unless it has both bearer tokens and TLS, and the refusal names
// the flags that are missing; a loopback address needs neither.
func TestListenHTTPNeedsTokensAndTLSOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name          string
		addr          string
		p             HTTPProtection
		refused       bool
		names, absent []string // flags the refusal names, and does not
	}{
		{name: "loopback without either", addr: "127.0.0.1:0"},
		{name: "localhost without either", addr: "localhost:0"},
		{name: "loopback v6 with tokens", addr: "[::1]:0", p: HTTPProtection{Tokens: true}},
		{name: "off loopback with both", addr: "0.0.0.0:0", p: HTTPProtection{Tokens: true, TLS: true}},
		{name: "off loopback with tokens only", addr: "0.0.0.0:0", p: HTTPProtection{Tokens: true}, refused: true,
			names: []string{"--http-tls-cert", "--http-tls-key"}, absent: []string{"--http-token-file"}},
		{name: "off loopback with TLS only", addr: "0.0.0.0:0", p: HTTPProtection{TLS: true}, refused: true,
			names: []string{"--http-token-file"}, absent: []string{"--http-tls-cert"}},
		{name: "off loopback with neither", addr: "[::]:0", refused: true,
			names: []string{"--http-token-file", "--http-tls-cert", "--http-tls-key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ListenHTTP(tc.addr, tc.p)
			if !tc.refused {
				if err != nil {
					if strings.Contains(tc.addr, "::") && !errors.Is(err, ErrUnprotectedAddress) {
						t.Skipf("no IPv6 here: %v", err)
					}
					t.Fatal(err)
				}
				l.Close()
				return
			}
			if err == nil {
				l.Close()
				t.Fatal("listening")
			}
			if !errors.Is(err, ErrUnprotectedAddress) {
				t.Fatalf("error %v is not ErrUnprotectedAddress", err)
			}
			for _, f := range tc.names {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
			for _, f := range tc.absent {
				if strings.Contains(err.Error(), f) {
					t.Errorf("error %q names %s, which was given", err, f)
				}
			}
		})
	}
	if _, err := ListenHTTP("no-port", HTTPProtection{}); err == nil || errors.Is(err, ErrUnprotectedAddress) {
		t.Errorf("an address without a port: %v", err)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 with serial
// and its key into dir as tls.crt and tls.key (the key first, each by a
// rename, as a secret volume swaps files), and returns the certificate.
func selfSigned(t *testing.T, dir string, serial int64) *x509.Certificate {
	t.Helper()
	c := testcert.Loopback(t, serial, "execfarm mcp test")
	replace(t, filepath.Join(dir, "tls.key"), c.KeyPEM)
	replace(t, filepath.Join(dir, "tls.crt"), c.CertPEM)
	return c.Cert
}

// replace writes b to path through a temporary file and a rename: a
// reader sees the old content or the new.
func replace(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// httpsToken is the bearer token of the HTTPS tests' server.
const httpsToken = "https-test-token-0123456789abcdef"

// serveHTTPS serves a bridge as `execfarm mcp --http` does with
// --http-token-file, --http-tls-cert and --http-tls-key: ListenHTTP on
// loopback, HTTPHandler, ServeTLS with the TLS config of a
// ReloadingCertificate of dir's tls.crt and tls.key, re-read every 10 ms.
// It returns the listener's address; everything stops at cleanup.
func serveHTTPS(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("alice "+httpsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := transport.ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := transport.NewReloadingCertificate(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := ListenHTTP("127.0.0.1:0", HTTPProtection{Tokens: true, TLS: true})
	if err != nil {
		cert.Close()
		t.Fatal(err)
	}
	b, err := New(Config{Executions: &fakeClient{}, Version: "test", Scope: HTTPScope([]byte("secret"))})
	if err != nil {
		cert.Close()
		lis.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b.HTTPHandler(HTTPConfig{Tokens: tokens}), TLSConfig: cert.TLSConfig(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // refused handshakes are what the tests make
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(lis, "", "") }()
	t.Cleanup(func() {
		b.Close()
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		cert.Close()
	})
	return lis.Addr().String()
}

// trusting returns an HTTP client that trusts roots only and sends
// httpsToken; close its idle connections when done.
func trusting(roots ...*x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	return &http.Client{Transport: bearerRT{token: httpsToken, next: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// listTools connects an MCP client to endpoint with hc and lists the
// tools.
func listTools(endpoint string, hc *http.Client) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "https", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// TestHTTPSServesMCP: with a certificate, an MCP client that trusts it
// connects over https and lists the tools; plaintext HTTP to the same
// port is not served, and a client that does not trust the certificate
// does not connect.
func TestHTTPSServesMCP(t *testing.T) {
	dir := t.TempDir()
	cert := selfSigned(t, dir, 1)
	addr := serveHTTPS(t, dir)

	hc := trusting(cert)
	defer hc.CloseIdleConnections()
	tools, err := listTools("https://"+addr+"/", hc)
	if err != nil {
		t.Fatalf("over https: %v", err)
	}
	if !strings.Contains(strings.Join(tools, " "), "runSandbox") {
		t.Errorf("tools over https: %v", tools)
	}

	plain := &http.Client{Transport: bearerRT{token: httpsToken, next: &http.Transport{}}}
	defer plain.CloseIdleConnections()
	if _, err := listTools("http://"+addr+"/", plain); err == nil {
		t.Error("an MCP client connected in plaintext to the TLS port")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := plain.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a plaintext request to the TLS port: HTTP %d, want 400 or no answer", resp.StatusCode)
		}
	}

	stranger := trusting(selfSigned(t, t.TempDir(), 2))
	defer stranger.CloseIdleConnections()
	if _, err := listTools("https://"+addr+"/", stranger); err == nil {
		t.Error("a client that does not trust the certificate connected")
	}
}

// TestHTTPSRenewsItsCertificate: certificate and key replaced on disk
// under the running server are served to the next connection, with no
// restart, and an MCP client that trusts only the new certificate then
// connects.
func TestHTTPSRenewsItsCertificate(t *testing.T) {
	dir := t.TempDir()
	first := selfSigned(t, dir, 1)
	addr := serveHTTPS(t, dir)
	served := func(roots ...*x509.Certificate) (*x509.Certificate, error) {
		pool := x509.NewCertPool()
		for _, c := range roots {
			pool.AddCert(c)
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: pool}}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
	}
	if c, err := served(first); err != nil || c.SerialNumber.Int64() != 1 {
		t.Fatalf("before the renewal: %v, %v", c, err)
	}

	second := selfSigned(t, dir, 2)
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := served(first, second)
		if err == nil && c.SerialNumber.Int64() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate is not served within 10 s: %v, %v", c, err)
		}
		<-tick.C
	}

	hc := trusting(second)
	defer hc.CloseIdleConnections()
	if _, err := listTools("https://"+addr+"/", hc); err != nil {
		t.Errorf("an MCP client trusting the renewed certificate: %v", err)
	}
	if _, err := served(first); err == nil {
		t.Error("a client trusting only the old certificate still got through")
	}
}
