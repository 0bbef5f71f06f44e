package transport

import (
	"context"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/test/testcert"
)

// leafPEM returns a leaf's certificate and key as PEM.
func leafPEM(l *testcert.Issued) (certPEM, keyPEM []byte) { return l.CertPEM, l.KeyPEM }

// writeFile writes b to dir/name by a rename, as the kubelet and
// cert-manager replace files: a reader sees the old or the new content.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// pki writes a CA, a server certificate for "execfarm.test" and a client
// certificate (CN=client) into dir, as PEM files; it returns their paths.
func pki(t *testing.T, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	c := testcert.CA(t, "execfarm test CA")
	in := time.Now().Add(time.Hour)
	sc, sk := leafPEM(c.Leaf(t, 2, "server", x509.ExtKeyUsageServerAuth, []string{"execfarm.test"}, in))
	cc, ck := leafPEM(c.Leaf(t, 3, "client", x509.ExtKeyUsageClientAuth, nil, in))
	return writeFile(t, dir, "ca.crt", c.CertPEM), writeFile(t, dir, "server.crt", sc), writeFile(t, dir, "server.key", sk),
		writeFile(t, dir, "client.crt", cc), writeFile(t, dir, "client.key", ck)
}

// serveHealth serves grpc.health.v1, and what register adds, with c's
// security on a loopback port, and returns its address.
func serveHealth(t *testing.T, c Config, register ...func(*grpc.Server)) string {
	t.Helper()
	sec, err := c.ServerSecurity()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(sec.Options...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	for _, r := range register {
		r(g)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); sec.Close() })
	return lis.Addr().String()
}

func check(t *testing.T, c Config) error {
	t.Helper()
	conn, err := c.Dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// TestMutualTLS: with mtls, a client with a certificate from the CA gets
// through, a client without one or trusting another CA is refused.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, sc, sk, cc, ck := pki(t, dir)
	addr := serveHealth(t, Config{Mode: ModeMTLS, CertPath: sc, KeyPath: sk, CAPath: ca})
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	client := Config{UseTCP: true, TCPHost: host, TCPPort: p, Mode: ModeMTLS, CAPath: ca,
		ClientCertPath: cc, ClientKeyPath: ck, ServerName: "execfarm.test"}
	if err := check(t, client); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	noCert := client
	noCert.Mode, noCert.ClientCertPath, noCert.ClientKeyPath = ModeTLS, "", ""
	if err := check(t, noCert); err == nil {
		t.Fatal("a client without a certificate got through an mtls server")
	}
	otherDir := t.TempDir()
	otherCA, _, _, _, _ := pki(t, otherDir)
	wrongTrust := client
	wrongTrust.CAPath = otherCA
	if err := check(t, wrongTrust); err == nil {
		t.Fatal("a client trusting another CA accepted the server")
	}
	plain := Config{UseTCP: true, TCPHost: host, TCPPort: p}
	if err := check(t, plain); err == nil {
		t.Fatal("a plaintext client got through a TLS server")
	}
}
