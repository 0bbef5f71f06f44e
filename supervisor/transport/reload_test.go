package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testcert"
)

// rotationServer serves whoAmI over mutual TLS with the files in dir
// (server.crt, server.key, ca.crt), re-read every 10 ms, and returns the
// server's security and a client Config for it (TCP, mtls, with the
// client files in cliDir).
func rotationServer(t *testing.T, dir, cliDir string) (*ServerSecurity, Config) {
	t.Helper()
	c := Config{Mode: ModeMTLS, CertPath: filepath.Join(dir, "server.crt"), KeyPath: filepath.Join(dir, "server.key"),
		CAPath: filepath.Join(dir, "ca.crt"), CertRefresh: 10 * time.Millisecond}
	sec, err := c.ServerSecurity()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(sec.Options...)
	sandboxv1.RegisterSandboxServiceServer(g, whoAmI{})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); sec.Close() })
	addr := lis.Addr().(*net.TCPAddr)
	return sec, Config{UseTCP: true, TCPHost: "127.0.0.1", TCPPort: addr.Port, Mode: ModeMTLS, ServerName: "execfarm.test",
		CAPath: filepath.Join(cliDir, "ca.crt"), ClientCertPath: filepath.Join(cliDir, "client.crt"), ClientKeyPath: filepath.Join(cliDir, "client.key")}
}

// handshake makes a new connection with c and one call on it; it returns
// the certificate the server presented and the principal the server saw.
func handshake(c Config) (served *x509.Certificate, principal string, err error) {
	conn, err := c.Dial()
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	return call(conn)
}

func call(conn *grpc.ClientConn) (*x509.Certificate, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var p peer.Peer
	resp, err := sandboxv1.NewSandboxServiceClient(conn).HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}, grpc.Peer(&p))
	if err != nil {
		return nil, "", err
	}
	return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0], resp.GetKubernetesContext(), nil
}

// eventually polls cond with new connections until it holds: the server
// re-reads its files on its own schedule, and a new connection is how a
// client learns what it serves. It fails after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		<-tick.C
	}
}

// TestCertificateRotation renews certificates on disk under a running
// server, as cert-manager and the kubelet do (each file replaced whole),
// and checks that the next connection uses them, with no restart: the
// server certificate alone (a connection made before keeps working, and
// the served certificate's expiry follows); a client's certificate alone
// (a client with the same configuration presents the new one); and the
// whole PKI under a new CA, after which the server refuses certificates
// of the old CA.
func TestCertificateRotation(t *testing.T) {
	dir, cliDir := t.TempDir(), t.TempDir()
	ca1 := testcert.CA(t, "CA one")
	hour, twoHours := time.Now().Add(time.Hour).Truncate(time.Second), time.Now().Add(2*time.Hour).Truncate(time.Second)
	writeServer := func(ca *testcert.Issued, serial int64, notAfter time.Time) []byte {
		crt, key := leafPEM(ca.Leaf(t, serial, "server", x509.ExtKeyUsageServerAuth, []string{"execfarm.test"}, notAfter))
		writeFile(t, dir, "server.key", key)
		writeFile(t, dir, "server.crt", crt)
		writeFile(t, dir, "ca.crt", ca.CertPEM)
		return crt
	}
	writeClient := func(ca *testcert.Issued, serial int64, cn string) {
		crt, key := leafPEM(ca.Leaf(t, serial, cn, x509.ExtKeyUsageClientAuth, nil, time.Now().Add(time.Hour)))
		writeFile(t, cliDir, "client.key", key)
		writeFile(t, cliDir, "client.crt", crt)
		writeFile(t, cliDir, "ca.crt", ca.CertPEM)
	}
	writeServer(ca1, 10, hour)
	writeClient(ca1, 20, "client-one")
	sec, client := rotationServer(t, dir, cliDir)

	first, who, err := handshake(client)
	if err != nil || first.SerialNumber.Int64() != 10 || who != "cert:CN=client-one" {
		t.Fatalf("first connection: serial %v, principal %q, %v", first.SerialNumber, who, err)
	}
	if na, ok := sec.CertificateNotAfter(); !ok || !na.Equal(hour) {
		t.Errorf("CertificateNotAfter = %v, %v; want %v", na, ok, hour)
	}
	before, err := client.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if _, _, err := call(before); err != nil {
		t.Fatal(err)
	}

	// 1. The server certificate is renewed under the same CA.
	writeServer(ca1, 11, twoHours)
	eventually(t, "the renewed server certificate", func() bool {
		c, _, err := handshake(client)
		return err == nil && c.SerialNumber.Int64() == 11
	})
	if na, _ := sec.CertificateNotAfter(); !na.Equal(twoHours) {
		t.Errorf("CertificateNotAfter after the renewal = %v, want %v", na, twoHours)
	}
	if c, _, err := call(before); err != nil || c.SerialNumber.Int64() != 10 {
		t.Errorf("a connection made before the renewal: %v, %v", c, err)
	}

	// 2. The client's certificate is renewed: the same client Config
	// presents it at its next connection.
	writeClient(ca1, 21, "client-two")
	if _, who, err := handshake(client); err != nil || who != "cert:CN=client-two" {
		t.Errorf("after the client's renewal the server saw %q, %v", who, err)
	}

	// 3. A new CA: server certificate, client CA and client certificate.
	oldCli := t.TempDir()
	for _, f := range []string{"ca.crt", "client.crt", "client.key"} {
		b, _ := os.ReadFile(filepath.Join(cliDir, f))
		writeFile(t, oldCli, f, b)
	}
	ca2 := testcert.CA(t, "CA two")
	served, _ := pem.Decode(writeServer(ca2, 30, hour))
	writeClient(ca2, 40, "client-three")
	eventually(t, "the new CA's certificates", func() bool {
		c, who, err := handshake(client)
		return err == nil && bytes.Equal(c.Raw, served.Bytes) && who == "cert:CN=client-three"
	})
	old := client
	old.CAPath, old.ClientCertPath, old.ClientKeyPath = filepath.Join(oldCli, "ca.crt"), filepath.Join(oldCli, "client.crt"), filepath.Join(oldCli, "client.key")
	if _, _, err := handshake(old); err == nil {
		t.Error("a client with the old CA's certificate got through after the CA rotation")
	}
}

// TestReloadNeedsOneDirectory: a certificate and its key in two
// directories cannot be re-read together, and the server says so at
// start instead of serving a certificate it would never renew.
func TestReloadNeedsOneDirectory(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	ca, sc, sk, _, _ := pki(t, dir)
	b, _ := os.ReadFile(sk)
	moved := writeFile(t, other, "server.key", b)
	if _, err := (Config{Mode: ModeMTLS, CertPath: sc, KeyPath: moved, CAPath: ca}).ServerSecurity(); err == nil {
		t.Fatal("a key outside the certificate's directory was accepted")
	}
	if _, err := (Config{Mode: ModeMTLS, CertPath: sc, KeyPath: sk}).ServerSecurity(); err == nil {
		t.Fatal("mtls without a client CA was accepted")
	}
}

// TestReloadingCertificate: the certificate an HTTPS server takes from
// ReloadingCertificate follows its files as ServerSecurity's does, its
// TLS config refuses TLS 1.1, and bad files are refused at start.
func TestReloadingCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.CA(t, "CA")
	write := func(serial int64) (crt, key string) {
		c, k := leafPEM(ca.Leaf(t, serial, "server", x509.ExtKeyUsageServerAuth, []string{"execfarm.test"}, time.Now().Add(time.Hour)))
		key = writeFile(t, dir, "tls.key", k)
		return writeFile(t, dir, "tls.crt", c), key
	}
	crt, key := write(10)
	rc, err := NewReloadingCertificate(crt, key, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	serial := func() int64 {
		c, err := rc.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.SerialNumber.Int64()
	}
	if s := serial(); s != 10 {
		t.Fatalf("serial %d, want 10", s)
	}
	write(11)
	eventually(t, "the renewed certificate", func() bool { return serial() == 11 })

	cfg := rc.TLSConfig()
	if cfg.MinVersion != tls.VersionTLS12 || cfg.GetCertificate == nil {
		t.Errorf("TLSConfig: MinVersion %#x, GetCertificate set %v", cfg.MinVersion, cfg.GetCertificate != nil)
	}
	srv, cli := net.Pipe()
	go func() {
		c := tls.Server(srv, cfg)
		_ = c.Handshake()
		c.Close()
	}()
	old := tls.Client(cli, &tls.Config{MaxVersion: tls.VersionTLS11, ServerName: "execfarm.test", InsecureSkipVerify: true})
	if err := old.Handshake(); err == nil {
		t.Error("a TLS 1.1 client got through")
	}
	old.Close()

	other := t.TempDir()
	b, _ := os.ReadFile(key)
	_, otherKey := leafPEM(ca.Leaf(t, 12, "other", x509.ExtKeyUsageServerAuth, nil, time.Now().Add(time.Hour)))
	for name, files := range map[string][2]string{
		"key in another directory": {crt, writeFile(t, other, "tls.key", b)},
		"no key":                   {crt, ""},
		"missing certificate":      {filepath.Join(dir, "absent.crt"), key},
		"key of another":           {crt, writeFile(t, dir, "other.key", otherKey)},
	} {
		if rc, err := NewReloadingCertificate(files[0], files[1], 0); err == nil {
			rc.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}
