package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, der: der, key: key}
}

// pem returns the CA's certificate as PEM.
func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})
}

// leaf issues a certificate for cn (with dns names) valid until notAfter,
// and returns it and its key as PEM.
func (ca *testCA) leaf(t *testing.T, serial int64, cn string, usage x509.ExtKeyUsage, dns []string, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

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
	c := newTestCA(t, "execfarm test CA")
	in := time.Now().Add(time.Hour)
	sc, sk := c.leaf(t, 2, "server", x509.ExtKeyUsageServerAuth, []string{"execfarm.test"}, in)
	cc, ck := c.leaf(t, 3, "client", x509.ExtKeyUsageClientAuth, nil, in)
	return writeFile(t, dir, "ca.crt", c.pem()), writeFile(t, dir, "server.crt", sc), writeFile(t, dir, "server.key", sk),
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
