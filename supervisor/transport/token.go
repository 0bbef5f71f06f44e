package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/supervisor/principal"
)

// MinTokenLength is the shortest bearer token accepted, in bytes: a
// shorter one is guessable, so the server refuses to start with it.
const MinTokenLength = 16

// DefaultTokenName names a token given without a name: the token of a
// one-token file, or of EXECFARM_TOKEN. Its principal is "token:default".
const DefaultTokenName = "default"

// Bounds of a token file: a path naming /dev/zero or a huge file must not
// exhaust memory, and the check of a call compares it with every token.
const (
	maxTokenFile   = 64 << 10 // bytes
	maxTokens      = 1024
	maxTokenName   = 64 // bytes
	tokenNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-"
)

// healthService answers without a token: it tells only whether the server
// serves, and probes (kubelet's gRPC probe) cannot send headers.
const healthService = "/grpc.health.v1.Health/"

// namedToken is one bearer token of a token file and the name of its
// principal.
type namedToken struct {
	name, token string
}

// tokens returns the bearer tokens of c: TokenPath's, else Token (named
// DefaultTokenName); none when neither is set.
//
// A token file holds one token per line as "NAME TOKEN" (fields separated
// by spaces or tabs), with blank lines and lines starting with '#'
// ignored; a file holding a single token and nothing else (the format of
// one-token files, surrounding whitespace allowed) names it
// DefaultTokenName. Names are 1 to 64 characters of letters, digits, '.',
// '_', '@' and '-', unique in the file; tokens are unique too. Errors: the
// file is not a regular file, cannot be read or is over 64 KiB; it holds
// no token or more than 1024; a line is malformed; a token is shorter
// than MinTokenLength or holds a byte other than printable ASCII without
// space (RFC 6750's token characters and more: what an HTTP/2 header
// value carries as is).
func (c Config) tokens() ([]namedToken, error) {
	if c.TokenPath == "" {
		if c.Token == "" {
			return nil, nil
		}
		if err := checkToken(c.Token); err != nil {
			return nil, err
		}
		return []namedToken{{DefaultTokenName, c.Token}}, nil
	}
	b, err := readTokenFile(c.TokenPath)
	if err != nil {
		return nil, err
	}
	out, err := parseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("transport: token file %s: %w", c.TokenPath, err)
	}
	return out, nil
}

// parseTokens parses a token file's contents (see Config.tokens).
func parseTokens(b []byte) ([]namedToken, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && len(bytes.Fields(t)) == 1 {
		// A one-token file, as before names existed: the whole of it is
		// the token, even one that starts with '#'.
		if err := checkToken(string(t)); err != nil {
			return nil, err
		}
		return []namedToken{{DefaultTokenName, string(t)}}, nil
	}
	var out []namedToken
	names, seen := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxTokenFile+1)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want NAME TOKEN", line)
		}
		name, tok := f[0], f[1]
		if len(name) > maxTokenName || strings.Trim(name, tokenNameChars) != "" {
			return nil, fmt.Errorf("line %d: token name %q: want 1 to %d letters, digits, '.', '_', '@' or '-'", line, name, maxTokenName)
		}
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", line, name, err)
		}
		if names[name] {
			return nil, fmt.Errorf("line %d: token name %q appears twice", line, name)
		}
		if seen[tok] {
			return nil, fmt.Errorf("line %d (%s): the same token is given to two names", line, name)
		}
		names[name], seen[tok] = true, true
		if out = append(out, namedToken{name, tok}); len(out) > maxTokens {
			return nil, fmt.Errorf("more than %d tokens", maxTokens)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no token in it")
	}
	return out, nil
}

// checkToken checks one token's length and characters.
func checkToken(t string) error {
	if len(t) < MinTokenLength || strings.IndexFunc(t, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return fmt.Errorf("transport: the token must be at least %d printable ASCII characters without spaces (e.g. openssl rand -hex 32)", MinTokenLength)
	}
	return nil
}

// clientToken returns the one token a client sends: c's only token, ""
// when none is set. A file of several tokens is an error: it is a
// server's list, and a client holds one.
func (c Config) clientToken() (string, error) {
	ts, err := c.tokens()
	switch {
	case err != nil:
		return "", err
	case len(ts) == 0:
		return "", nil
	case len(ts) > 1:
		return "", fmt.Errorf("transport: token file %s holds %d tokens; a client sends one (a file with one line, TOKEN or NAME TOKEN)", c.TokenPath, len(ts))
	}
	return ts[0].token, nil
}

// CheckToken reads and checks the tokens as the server will, so that a
// bad file is refused before anything else starts.
func (c Config) CheckToken() error {
	_, err := c.tokens()
	return err
}

// readTokenFile reads a regular file of at most maxTokenFile bytes,
// without blocking on a FIFO.
func readTokenFile(path string) ([]byte, error) {
	// Checked before the open too: opening some devices has effects.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("transport: read token: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("transport: token file %s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("transport: read token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("transport: read token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("transport: token file %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("transport: read token: %w", err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("transport: token file %s is over %d bytes", path, maxTokenFile)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("transport: token file %s is empty", path)
	}
	return b, nil
}

// TokenSet is a server's named bearer tokens, as a token file holds them
// (Config.tokens gives the format), for servers of other protocols that
// take the same file (the MCP bridge over HTTP).
type TokenSet struct {
	names   []string
	digests [][sha256.Size]byte
}

// ReadTokenFile reads a token file as a server does (format and errors:
// Config.tokens).
func ReadTokenFile(path string) (*TokenSet, error) {
	ts, err := Config{TokenPath: path}.tokens()
	if err != nil {
		return nil, err
	}
	return newTokenSet(ts), nil
}

func newTokenSet(tokens []namedToken) *TokenSet {
	s := &TokenSet{names: make([]string, len(tokens)), digests: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		s.names[i], s.digests[i] = t.name, sha256.Sum256([]byte(t.token))
	}
	return s
}

// Lookup returns the name of token; ok is false when it is none of the
// set's. It compares SHA-256 digests with every token in constant time,
// so its time tells neither which token nor how much of one matched.
func (s *TokenSet) Lookup(token string) (name string, ok bool) {
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range s.digests {
		if subtle.ConstantTimeCompare(d[:], s.digests[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return s.names[match], true
}

// Len returns how many tokens the set holds.
func (s *TokenSet) Len() int { return len(s.names) }

// tokenOptions makes every call but grpc.health.v1's carry
// "authorization: bearer TOKEN" with one of the set's tokens, and puts
// the token's principal (principal.Token(name)) in the call's context;
// others end UNAUTHENTICATED (DESIGN.md, Errors). go-grpc-middleware's
// auth interceptors read the header; TokenSet.Lookup checks it.
func tokenOptions(set *TokenSet) []grpc.ServerOption {
	check := func(ctx context.Context) (context.Context, error) {
		if m, _ := grpc.Method(ctx); strings.HasPrefix(m, healthService) {
			return ctx, nil
		}
		name, err := checkBearer(ctx, set)
		if err != nil {
			return nil, err
		}
		// The connection leaves the unauthenticated pool (guard.go).
		prove(ctx)
		return principal.NewContext(ctx, principal.Token(name)), nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(auth.UnaryServerInterceptor(check)),
		grpc.ChainStreamInterceptor(auth.StreamServerInterceptor(check)),
	}
}

// checkBearer returns the name of the bearer token of ctx's incoming
// metadata, or UNAUTHENTICATED when it has none of set's.
func checkBearer(ctx context.Context, set *TokenSet) (string, error) {
	got, err := auth.AuthFromMD(ctx, "bearer")
	if err != nil {
		return "", status.Error(codes.Unauthenticated, "this server requires a bearer token (metadata \"authorization: Bearer TOKEN\"; execfarm clients: --token-file or EXECFARM_TOKEN)")
	}
	name, ok := set.Lookup(got)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return name, nil
}

// principalOptions put the caller's principal in every call's context
// when a token did not: the subject of its verified client certificate,
// else the local principal (principal.FromPeer). A call that carries a
// client key (principal.ScopeKeyHeader) gets that client of its
// principal instead (principal.Principal.WithClient); a malformed key is
// UNAUTHENTICATED. They come after tokenOptions.
func principalOptions() []grpc.ServerOption {
	identify := func(ctx context.Context) (context.Context, error) {
		p, ok := principal.FromContext(ctx)
		if !ok {
			p = principal.FromPeer(ctx)
		}
		key, err := principal.ClientKeyFromIncoming(ctx)
		if err == nil && key != "" {
			p, err = p.Unscoped().WithClient(key)
		}
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, err.Error())
		}
		return principal.NewContext(ctx, p), nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(auth.UnaryServerInterceptor(identify)),
		grpc.ChainStreamInterceptor(auth.StreamServerInterceptor(identify)),
	}
}

// bearer sends the token with every call. It does not require transport
// security: a unix socket or loopback TCP has none and needs none, and
// the server refuses insecure TCP elsewhere (ErrInsecureRemote).
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }
