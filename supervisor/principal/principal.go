package principal

import (
	"context"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Kind is how a principal was authenticated.
type Kind int

// Kinds of principal.
const (
	// KindLocal is the one principal of callers authenticated neither by
	// a token nor by a client certificate.
	KindLocal Kind = iota + 1
	// KindToken is a caller that presented a named bearer token.
	KindToken
	// KindCertificate is a caller that presented a verified client
	// certificate (mTLS).
	KindCertificate
)

// String returns "local", "token" or "cert".
func (k Kind) String() string {
	switch k {
	case KindLocal:
		return "local"
	case KindToken:
		return "token"
	case KindCertificate:
		return "cert"
	}
	return "unknown"
}

// Principal is who is calling. The zero value is no principal (a call
// that did not pass through the transport's interceptors); two calls are
// the same principal when their Principals are equal (==).
type Principal struct {
	// Kind is how the caller was authenticated.
	Kind Kind
	// Name is the token's name (KindToken), the certificate's subject as
	// an RFC 2253 string, e.g. "CN=alice,O=team" (KindCertificate), or
	// "" (KindLocal).
	Name string
}

// Local returns the principal of unauthenticated callers.
func Local() Principal { return Principal{Kind: KindLocal} }

// Token returns the principal of the bearer token named name.
func Token(name string) Principal { return Principal{Kind: KindToken, Name: name} }

// Certificate returns the principal of a client certificate whose
// subject is subject (RFC 2253).
func Certificate(subject string) Principal {
	return Principal{Kind: KindCertificate, Name: subject}
}

// IsZero reports whether p is no principal.
func (p Principal) IsZero() bool { return p == Principal{} }

// String returns "local", "token:NAME" or "cert:SUBJECT": a stable key
// that names the principal in logs, metrics-free listings and ownership
// records. Distinct principals have distinct strings.
func (p Principal) String() string {
	switch p.Kind {
	case KindLocal:
		return "local"
	case KindToken, KindCertificate:
		return p.Kind.String() + ":" + p.Name
	}
	return ""
}

// Parse is String's inverse; ok is false for anything String does not
// return.
func Parse(s string) (p Principal, ok bool) {
	if s == "local" {
		return Local(), true
	}
	kind, name, found := strings.Cut(s, ":")
	if !found || name == "" {
		return Principal{}, false
	}
	switch kind {
	case "token":
		return Token(name), true
	case "cert":
		return Certificate(name), true
	}
	return Principal{}, false
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal NewContext put in ctx; ok is false
// when there is none.
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(ctxKey{}).(Principal)
	return p, ok && !p.IsZero()
}

// FromPeer returns the principal of a call that presented no bearer
// token: the subject of its verified client certificate when the
// connection is mutual TLS, else Local.
func FromPeer(ctx context.Context) Principal {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return Local()
	}
	tlsInfo, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(tlsInfo.State.VerifiedChains) == 0 || len(tlsInfo.State.VerifiedChains[0]) == 0 {
		return Local()
	}
	return Certificate(tlsInfo.State.VerifiedChains[0][0].Subject.String())
}
