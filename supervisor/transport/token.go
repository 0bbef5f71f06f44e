package transport

import (
	"context"
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
)

// MinTokenLength is the shortest bearer token accepted, in bytes: a
// shorter one is guessable, so the server refuses to start with it.
const MinTokenLength = 16

// healthService answers without a token: it tells only whether the server
// serves, and probes (kubelet's gRPC probe) cannot send headers.
const healthService = "/grpc.health.v1.Health/"

// maxTokenFile bounds the token file, bytes: a token is short, and a
// path naming /dev/zero or a huge file must not exhaust memory.
const maxTokenFile = 4096

// token returns the bearer token: TokenPath's contents (surrounding
// whitespace trimmed), else Token; "" when neither is set. Errors: the
// file is not a regular file, cannot be read or is over 4 KiB; the token
// is shorter than MinTokenLength or holds a byte other than printable
// ASCII without space (RFC 6750's token characters and more: what an
// HTTP/2 header value carries as is).
func (c Config) token() (string, error) {
	t := c.Token
	if c.TokenPath != "" {
		b, err := readTokenFile(c.TokenPath)
		if err != nil {
			return "", err
		}
		t = strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("transport: token file %s is empty", c.TokenPath)
		}
	}
	if t == "" {
		return "", nil
	}
	if len(t) < MinTokenLength || strings.IndexFunc(t, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return "", fmt.Errorf("transport: the token must be at least %d printable ASCII characters without spaces (e.g. openssl rand -hex 32)", MinTokenLength)
	}
	return t, nil
}

// CheckToken reads and checks the token as the server and client will,
// so that a bad one is refused before anything else starts.
func (c Config) CheckToken() error {
	_, err := c.token()
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
	return b, nil
}

// tokenOptions makes every call but grpc.health.v1's carry
// "authorization: bearer TOKEN"; others end UNAUTHENTICATED
// (DESIGN.md, Errors). go-grpc-middleware's auth interceptors read the
// header; the comparison takes constant time.
func tokenOptions(token string) []grpc.ServerOption {
	check := func(ctx context.Context) (context.Context, error) {
		if m, _ := grpc.Method(ctx); strings.HasPrefix(m, healthService) {
			return ctx, nil
		}
		got, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, "this server requires a bearer token (metadata \"authorization: Bearer TOKEN\"; execfarm clients: --token-file or EXECFARM_TOKEN)")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		return ctx, nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(auth.UnaryServerInterceptor(check)),
		grpc.ChainStreamInterceptor(auth.StreamServerInterceptor(check)),
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
