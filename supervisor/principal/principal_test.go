package principal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

func TestStringParse(t *testing.T) {
	tests := []struct {
		p Principal
		s string
	}{
		{Local(), "local"},
		{Token("alice"), "token:alice"},
		{Certificate("CN=bob,O=team"), "cert:CN=bob,O=team"},
		{Certificate("CN=a:b"), "cert:CN=a:b"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.s {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.s)
		}
		if got, ok := Parse(tt.s); !ok || got != tt.p {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", tt.s, got, ok, tt.p)
		}
	}
	for _, bad := range []string{"", "token:", "cert", "root", "token", "x:y", "Local"} {
		if p, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) = %#v, want refused", bad, p)
		}
	}
	// A token named like a certificate subject is another principal.
	if Token("CN=bob") == Certificate("CN=bob") || Token("CN=bob").String() == Certificate("CN=bob").String() {
		t.Error("a token and a certificate with the same name are the same principal")
	}
}

func TestContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext of a bare context found a principal")
	}
	if _, ok := FromContext(NewContext(context.Background(), Principal{})); ok {
		t.Fatal("the zero Principal counts as a principal")
	}
	p, ok := FromContext(NewContext(context.Background(), Token("alice")))
	if !ok || p != Token("alice") {
		t.Fatalf("FromContext = %#v, %v", p, ok)
	}
}

func TestFromPeer(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"team"}}}
	withPeer := func(ai credentials.AuthInfo) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.UnixAddr{Name: "@", Net: "unix"}, AuthInfo: ai})
	}
	tests := []struct {
		name string
		ctx  context.Context
		want Principal
	}{
		{"no peer", context.Background(), Local()},
		{"unix socket, no credentials", withPeer(nil), Local()},
		{"TLS without a client certificate", withPeer(credentials.TLSInfo{State: tls.ConnectionState{}}), Local()},
		{"mTLS", withPeer(credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}}), Certificate("CN=alice,O=team")},
		// A certificate the handshake did not verify names nobody.
		{"unverified certificate", withPeer(credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}}), Local()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromPeer(tt.ctx); got != tt.want {
				t.Fatalf("FromPeer = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClients: a client of a principal is a principal of its own, named
// by its key's digest; String and Parse round-trip it, and nothing else
// parses as one.
func TestClients(t *testing.T) {
	key := strings.Repeat("k", MinClientKeyLength)
	for _, base := range []Principal{Local(), Token("alice"), Certificate("CN=a/b,O=x")} {
		c, err := base.WithClient(key)
		if err != nil {
			t.Fatal(err)
		}
		if c == base || c.Unscoped() != base || len(c.Client) != ClientIDLength {
			t.Errorf("client %#v of %#v", c, base)
		}
		if got, ok := Parse(c.String()); !ok || got != c {
			t.Errorf("Parse(%q) = %#v, %v", c.String(), got, ok)
		}
		if strings.Contains(c.String(), key) {
			t.Errorf("%q holds the key", c.String())
		}
		other, _ := base.WithClient(key + "x")
		if other == c {
			t.Error("two keys, one client")
		}
	}
	// A certificate subject shaped like a client's string is not one.
	c, _ := Local().WithClient(key)
	if Certificate(c.String()).String() == c.String() {
		t.Error("a certificate subject can spell a client")
	}
	for _, bad := range []string{"client:@local", "client:abc@local", "client:" + strings.Repeat("g", ClientIDLength) + "@local",
		"client:" + strings.Repeat("a", ClientIDLength) + "@", "client:" + strings.Repeat("a", ClientIDLength) + "@client:" + strings.Repeat("a", ClientIDLength) + "@local"} {
		if p, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) = %#v", bad, p)
		}
	}
	for _, bad := range []string{"", "short", strings.Repeat("x", MaxClientKeyLength+1), strings.Repeat("x", 40) + "\x00", strings.Repeat("x", 40) + " "} {
		if _, err := Local().WithClient(bad); !errors.Is(err, ErrClientKey) {
			t.Errorf("WithClient(%q): %v", bad, err)
		}
	}
}
