package principal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
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
	// Client narrows the principal to one client of its holder: "" for
	// the authenticated principal itself, else ClientIDLength hex digits
	// of the SHA-256 of a client key the caller sent (WithClient). Each
	// client is a principal of its own; see ScopeKeyHeader.
	Client string
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

// Unscoped returns p without its client: the principal the transport
// authenticated. Quotas count per unscoped principal, so that clients
// never hold more than their holder may.
func (p Principal) Unscoped() Principal {
	p.Client = ""
	return p
}

// String returns "local", "token:NAME" or "cert:SUBJECT", prefixed
// "client:ID@" for a client of one of them: a stable key that names the
// principal in logs, listings and ownership records. Distinct principals
// have distinct strings (the prefix cannot start an unscoped principal's
// string, and ID has a fixed length).
func (p Principal) String() string {
	var s string
	switch p.Kind {
	case KindLocal:
		s = "local"
	case KindToken, KindCertificate:
		s = p.Kind.String() + ":" + p.Name
	default:
		return ""
	}
	if p.Client != "" {
		return clientPrefix + p.Client + "@" + s
	}
	return s
}

const clientPrefix = "client:"

// Parse is String's inverse; ok is false for anything String does not
// return.
func Parse(s string) (p Principal, ok bool) {
	if rest, found := strings.CutPrefix(s, clientPrefix); found {
		id, base, found := strings.Cut(rest, "@")
		if !found || !validClientID(id) {
			return Principal{}, false
		}
		p, ok := Parse(base)
		if !ok || p.Client != "" {
			return Principal{}, false
		}
		p.Client = id
		return p, true
	}
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

// Client keys: a caller narrows its principal to one of its clients by
// sending a key of its own choosing in the ScopeKeyHeader metadata of its
// calls; the transport (supervisor/transport) makes the call's principal
// that of the client the key names (WithClient). A client's executions
// and session sandboxes are its own: every other client of its holder is
// told they do not exist, as any other principal is, and so is the
// unscoped principal, except that it lists, reads the status of and
// deletes its clients' session sandboxes (supervisor/session.Manager.
// Oversee). A key only narrows: nothing a caller sends can make it another
// principal or another principal's client, and the key never leaves the
// process that received it (only a digest of it names the client), so
// one client cannot act as another without that client's key. The MCP
// bridge (`execfarm mcp`) gives each of its clients a key: each stdio
// process one drawn at random, each HTTP bearer token one derived from
// the token.
const (
	// ScopeKeyHeader is the gRPC metadata key of a client key.
	ScopeKeyHeader = "execfarm-client-key"
	// MinClientKeyLength and MaxClientKeyLength bound a client key, bytes
	// of printable ASCII without spaces: shorter ones could be guessed.
	MinClientKeyLength = 32
	MaxClientKeyLength = 256
	// ClientIDLength is the length of Principal.Client, hex digits (128
	// bits of the key's SHA-256).
	ClientIDLength = 32
)

// ErrClientKey is the error of a malformed client key.
var ErrClientKey = errors.New("principal: a client key (metadata " + ScopeKeyHeader + ") is 32 to 256 printable ASCII characters without spaces, sent once")

// WithClient returns p narrowed to the client whose key is key; p must be
// unscoped. Errors: ErrClientKey for a key too short, too long or holding
// other characters.
func (p Principal) WithClient(key string) (Principal, error) {
	if len(key) < MinClientKeyLength || len(key) > MaxClientKeyLength || strings.IndexFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return Principal{}, ErrClientKey
	}
	sum := sha256.Sum256([]byte(key))
	p.Client = hex.EncodeToString(sum[:])[:ClientIDLength]
	return p, nil
}

func validClientID(id string) bool {
	if len(id) != ClientIDLength {
		return false
	}
	return strings.Trim(id, "0123456789abcdef") == ""
}

// ClientKeyFromIncoming returns the client key of a call's incoming
// metadata: "" when there is none, ErrClientKey when there are several.
func ClientKeyFromIncoming(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(ScopeKeyHeader)
	switch len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], nil
	}
	return "", ErrClientKey
}

// SharedScriptsHeader is the gRPC metadata key by which a client's call
// asks that scripts it saves and runs by name be its holder's, shared by
// every client of the holder that asks so, rather than its own: what the
// MCP bridge asks for a client that lives as long as one stdio process or
// one tokenless session, all of them the same user, whose scripts must
// outlive the session (cached scripts are reused across sessions). It
// narrows nothing and widens nothing the caller could not do without a
// client key; its executions and sandboxes stay its own. The value is
// SharedScripts.
const (
	SharedScriptsHeader = "execfarm-client-scripts"
	SharedScripts       = "shared"
)

// WithSharedScripts returns ctx whose outgoing gRPC calls carry
// SharedScriptsHeader.
func WithSharedScripts(ctx context.Context) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(SharedScriptsHeader, SharedScripts)
	return metadata.NewOutgoingContext(ctx, md)
}

// SharedScriptsFromIncoming reports whether a call's incoming metadata
// asks for its holder's scripts (SharedScriptsHeader is SharedScripts).
func SharedScriptsFromIncoming(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(SharedScriptsHeader)
	return len(v) == 1 && v[0] == SharedScripts
}

// WithClientKey returns ctx whose outgoing gRPC calls carry key as their
// client key (what a client such as the MCP bridge does).
func WithClientKey(ctx context.Context, key string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(ScopeKeyHeader, key)
	return metadata.NewOutgoingContext(ctx, md)
}
