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

// pki writes a CA, a server certificate for "execfarm.test" and a client
// certificate into dir, as PEM files; it returns their paths.
func pki(t *testing.T, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "execfarm test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return write(cn+".crt", "CERTIFICATE", der), write(cn+".key", "EC PRIVATE KEY", kb)
	}
	ca = write("ca.crt", "CERTIFICATE", caDER)
	srvCert, srvKey = leaf(2, "server", x509.ExtKeyUsageServerAuth, []string{"execfarm.test"})
	cliCert, cliKey = leaf(3, "client", x509.ExtKeyUsageClientAuth, nil)
	return
}

// serveHealth serves grpc.health.v1, and what register adds, with c's
// security on a loopback port, and returns its address.
func serveHealth(t *testing.T, c Config, register ...func(*grpc.Server)) string {
	t.Helper()
	opts, err := c.ServerOptions()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	for _, r := range register {
		r(g)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
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
