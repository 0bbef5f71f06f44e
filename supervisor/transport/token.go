package transport

import (
	"context"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"

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

// token returns the bearer token: TokenPath's contents (surrounding
// whitespace trimmed), else Token; "" when neither is set. Errors: the
// file cannot be read, or the token is shorter than MinTokenLength or
// holds whitespace.
func (c Config) token() (string, error) {
	t := c.Token
	if c.TokenPath != "" {
		b, err := os.ReadFile(c.TokenPath)
		if err != nil {
			return "", fmt.Errorf("transport: read token: %w", err)
		}
		t = strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("transport: token file %s is empty", c.TokenPath)
		}
	}
	if t == "" {
		return "", nil
	}
	if len(t) < MinTokenLength || strings.ContainsAny(t, " \t\r\n") {
		return "", fmt.Errorf("transport: the token must be at least %d bytes without whitespace (e.g. openssl rand -hex 32)", MinTokenLength)
	}
	return t, nil
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
