// Package testcert issues X.509 certificates for tests: a certificate
// authority and leaves it signs, or a self-signed server certificate for
// 127.0.0.1. Keys are ECDSA P-256; certificates are valid from an hour
// ago. Test support, not product code.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// Issued is a certificate with its key, parsed and as PEM.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte // "EC PRIVATE KEY"
	key     *ecdsa.PrivateKey
}

// issue signs tmpl with parent's key (tmpl itself when parent is nil:
// self-signed), filling in the key and NotBefore; it fails t on error.
func issue(t testing.TB, tmpl *x509.Certificate, parent *Issued) *Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Issued{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
		key:     key,
	}
}

// CA returns a certificate authority named name, valid for an hour.
func CA(t testing.TB, name string) *Issued {
	t.Helper()
	return issue(t, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotAfter: time.Now().Add(time.Hour),
		IsCA:     true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil)
}

// Leaf returns a certificate for cn (and the DNS names dns) with serial
// and the extended usage usage, valid until notAfter, signed by ca.
func (ca *Issued) Leaf(t testing.TB, serial int64, cn string, usage x509.ExtKeyUsage, dns []string, notAfter time.Time) *Issued {
	t.Helper()
	return issue(t, &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}, ca)
}

// Loopback returns a self-signed server certificate for 127.0.0.1 named
// cn with serial, valid for an hour.
func Loopback(t testing.TB, serial int64, cn string) *Issued {
	t.Helper()
	return issue(t, &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotAfter:    time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, nil)
}
