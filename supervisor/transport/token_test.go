package transport

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

const goodToken = "0123456789abcdef0123456789abcdef"

// serveWithToken serves grpc.health.v1 and an unimplemented
// SandboxService (a call that passes the token check ends UNIMPLEMENTED)
// with c's options on a loopback port, and returns a client Config for it.
func serveWithToken(t *testing.T, c Config) Config {
	t.Helper()
	addr := serveHealth(t, c, func(g *grpc.Server) {
		sandboxv1.RegisterSandboxServiceServer(g, sandboxv1.UnimplementedSandboxServiceServer{})
	})
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return Config{UseTCP: true, TCPHost: "127.0.0.1", TCPPort: p}
}

// codesOf makes a unary and a streaming SandboxService call with c and
// returns their status codes.
func codesOf(t *testing.T, c Config) (unary, stream codes.Code) {
	t.Helper()
	conn, err := c.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := sandboxv1.NewSandboxServiceClient(conn)
	_, err = client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
	unary = status.Code(err)
	st, err := client.ExecuteStream(ctx, &sandboxv1.ExecuteRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	return unary, status.Code(err)
}

// TestBearerToken: with a token, calls without it or with another are
// UNAUTHENTICATED, unary and streaming alike; the right one passes;
// grpc.health.v1 needs none.
func TestBearerToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(goodToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := serveWithToken(t, Config{TokenPath: file})

	if u, s := codesOf(t, client); u != codes.Unauthenticated || s != codes.Unauthenticated {
		t.Errorf("no token: %v, %v; want Unauthenticated", u, s)
	}
	wrong := client
	wrong.Token = strings.Repeat("x", len(goodToken))
	if u, s := codesOf(t, wrong); u != codes.Unauthenticated || s != codes.Unauthenticated {
		t.Errorf("wrong token: %v, %v; want Unauthenticated", u, s)
	}
	right := client
	right.TokenPath = file // the trailing newline is not part of it
	if u, s := codesOf(t, right); u != codes.Unimplemented || s != codes.Unimplemented {
		t.Errorf("right token: %v, %v; want the call through (Unimplemented)", u, s)
	}
	if err := check(t, client); err != nil {
		t.Errorf("grpc.health.v1 without a token: %v", err)
	}
	// Without a token on the server, calls pass with or without one.
	open := serveWithToken(t, Config{})
	if u, _ := codesOf(t, open); u != codes.Unimplemented {
		t.Errorf("server without a token: %v", u)
	}
}

func TestTokenRefusedWhenWeak(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", maxTokenFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"short":        {Token: "abc"},
		"whitespace":   {Token: "0123456789 abcdef0123"},
		"vertical tab": {Token: "0123456789\vabcdef0123"},
		"non-ASCII":    {Token: "0123456789éabcdef0123"},
		"empty file":   {TokenPath: empty},
		"missing file": {TokenPath: filepath.Join(dir, "missing")},
		"over 64 KiB":  {TokenPath: big},
		"a FIFO":       {TokenPath: fifo},
		"a device":     {TokenPath: "/dev/zero"},
		"a directory":  {TokenPath: dir},
	} {
		if _, err := c.ServerSecurity(); err == nil {
			t.Errorf("%s: server accepted the token", name)
		}
		if _, err := c.DialOptions(); err == nil {
			t.Errorf("%s: client accepted the token", name)
		}
	}
	c, err := FromEnv(Config{}, env(map[string]string{"EXECFARM_TOKEN": goodToken}))
	if err != nil || c.Token != goodToken {
		t.Errorf("EXECFARM_TOKEN: %+v, %v", c, err)
	}
}
