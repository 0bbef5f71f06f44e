package transport

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/principal"
)

// whoAmI is a SandboxService whose HealthCheck answers the caller's
// principal (principal.String) in kubernetes_context, "" when the call
// carries none, and whose ExecuteStream sends it in one chunk's output.
type whoAmI struct {
	sandboxv1.UnimplementedSandboxServiceServer
}

func who(ctx context.Context) string {
	p, _ := principal.FromContext(ctx)
	return p.String()
}

func (whoAmI) HealthCheck(ctx context.Context, _ *sandboxv1.HealthCheckRequest) (*sandboxv1.HealthCheckResponse, error) {
	return &sandboxv1.HealthCheckResponse{KubernetesContext: who(ctx)}, nil
}

func (whoAmI) ExecuteStream(_ *sandboxv1.ExecuteRequest, st sandboxv1.SandboxService_ExecuteStreamServer) error {
	return st.Send(&sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_Output{Output: who(st.Context())}})
}

// serveWhoAmI serves whoAmI with c's options on a loopback port and
// returns a client Config for it (TCP, insecure unless adjusted).
func serveWhoAmI(t *testing.T, c Config) Config {
	t.Helper()
	addr := serveHealth(t, c, func(g *grpc.Server) { sandboxv1.RegisterSandboxServiceServer(g, whoAmI{}) })
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return Config{UseTCP: true, TCPHost: host, TCPPort: p}
}

// principalsOf returns the principal the server saw in a unary and in a
// streaming call made with c.
func principalsOf(t *testing.T, c Config) (unary, stream string) {
	t.Helper()
	conn, err := c.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := sandboxv1.NewSandboxServiceClient(conn)
	resp, err := client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("HealthCheck: %v", err)
	}
	st, err := client.ExecuteStream(ctx, &sandboxv1.ExecuteRequest{})
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	chunk, err := st.Recv()
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	return resp.GetKubernetesContext(), chunk.GetOutput()
}

const (
	aliceToken = "alice-0123456789abcdef0123456789"
	bobToken   = "bob-0123456789abcdef0123456789ab"
)

// TestNamedTokens: each token of a file gives its calls the principal of
// its name, unary and streaming alike; an unknown token is refused.
func TestNamedTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	content := "# execfarm tokens\n\nalice " + aliceToken + "\n\tbob\t" + bobToken + "  \n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveWhoAmI(t, Config{TokenPath: file})
	for _, tc := range []struct{ token, want string }{{aliceToken, "token:alice"}, {bobToken, "token:bob"}} {
		c := srv
		c.Token = tc.token
		if u, s := principalsOf(t, c); u != tc.want || s != tc.want {
			t.Errorf("token %s…: principals %q, %q; want %q", tc.token[:5], u, s, tc.want)
		}
	}
	other := srv
	other.Token = strings.Repeat("z", 32)
	if u, s := codesOf(t, other); u.String() != "Unauthenticated" || s.String() != "Unauthenticated" {
		t.Errorf("unknown token: %v, %v; want Unauthenticated", u, s)
	}
	// A client given the server's file refuses it: it holds two tokens.
	cli := srv
	cli.TokenPath = file
	if _, err := cli.DialOptions(); err == nil || !strings.Contains(err.Error(), "holds 2 tokens") {
		t.Errorf("client with a two-token file: %v", err)
	}
	// A client file of one NAME TOKEN line sends its token.
	one := filepath.Join(t.TempDir(), "bob")
	if err := os.WriteFile(one, []byte("bob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli.TokenPath = one
	if u, _ := principalsOf(t, cli); u != "token:bob" {
		t.Errorf("client with bob's one-line file: %q", u)
	}
}

// TestOneTokenFileIsDefault: the one-token file of before names its token
// "default", whatever it starts with; so does EXECFARM_TOKEN.
func TestOneTokenFileIsDefault(t *testing.T) {
	for _, tok := range []string{goodToken, "#" + goodToken} {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte("\n  "+tok+"\n\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := serveWhoAmI(t, Config{TokenPath: file})
		cli := srv
		cli.TokenPath = file
		if u, s := principalsOf(t, cli); u != "token:default" || s != "token:default" {
			t.Errorf("one-token file %q: principals %q, %q", tok[:3], u, s)
		}
	}
	srv := serveWhoAmI(t, Config{Token: goodToken})
	cli := srv
	cli.Token = goodToken
	if u, _ := principalsOf(t, cli); u != "token:default" {
		t.Errorf("EXECFARM_TOKEN: principal %q", u)
	}
}

// TestLocalPrincipal: a server without tokens or client certificates
// gives every caller the local principal.
func TestLocalPrincipal(t *testing.T) {
	if u, s := principalsOf(t, serveWhoAmI(t, Config{})); u != "local" || s != "local" {
		t.Errorf("principals %q, %q; want local", u, s)
	}
}

// TestCertificatePrincipal: over mutual TLS a caller is its certificate's
// subject, unless it also sends a token, which then names it.
func TestCertificatePrincipal(t *testing.T) {
	dir := t.TempDir()
	ca, sc, sk, cc, ck := pki(t, dir)
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tokens := range []bool{false, true} {
		srvCfg := Config{Mode: ModeMTLS, CertPath: sc, KeyPath: sk, CAPath: ca}
		if tokens {
			srvCfg.TokenPath = file
		}
		cli := serveWhoAmI(t, srvCfg)
		cli.Mode, cli.CAPath, cli.ClientCertPath, cli.ClientKeyPath, cli.ServerName = ModeMTLS, ca, cc, ck, "execfarm.test"
		want := "cert:CN=client"
		if tokens {
			cli.Token, want = aliceToken, "token:alice"
		}
		if u, s := principalsOf(t, cli); u != want || s != want {
			t.Errorf("tokens %v: principals %q, %q; want %q", tokens, u, s, want)
		}
	}
}

// TestTokenFileFormat: what a token file may hold, and each refusal.
func TestTokenFileFormat(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []namedToken
		errPart string
	}{
		{name: "one token", content: goodToken + "\n", want: []namedToken{{"default", goodToken}}},
		{name: "one named token", content: "ci " + goodToken, want: []namedToken{{"ci", goodToken}}},
		{name: "named tokens, comments, blank lines", content: "# x\n\nalice " + aliceToken + "\n  # y\nbob " + bobToken + "\n",
			want: []namedToken{{"alice", aliceToken}, {"bob", bobToken}}},
		{name: "name characters", content: "a.b_c@d-e " + goodToken, want: []namedToken{{"a.b_c@d-e", goodToken}}},
		{name: "only comments", content: "# nothing\n# here\n", errPart: "no token"},
		{name: "three fields", content: "alice " + aliceToken + " extra\n", errPart: "line 1: want NAME TOKEN"},
		{name: "a lone token among named ones", content: "alice " + aliceToken + "\n" + bobToken + "\n", errPart: "line 2: want NAME TOKEN"},
		{name: "bad name", content: "al:ice " + aliceToken, errPart: "token name"},
		{name: "long name", content: strings.Repeat("n", 65) + " " + aliceToken, errPart: "token name"},
		{name: "short token", content: "alice short\nbob " + bobToken, errPart: "line 1 (alice)"},
		{name: "duplicate name", content: "alice " + aliceToken + "\nalice " + bobToken, errPart: "appears twice"},
		{name: "duplicate token", content: "alice " + aliceToken + "\nbob " + aliceToken, errPart: "two names"},
		{name: "too many", content: manyTokens(maxTokens + 1), errPart: "more than 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTokens([]byte(tt.content))
			if tt.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("parseTokens: %v, want an error with %q", err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseTokens = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("parseTokens = %v, want %v", got, tt.want)
				}
			}
		})
	}
	if _, err := parseTokens([]byte(manyTokens(maxTokens))); err != nil {
		t.Errorf("%d tokens: %v", maxTokens, err)
	}
}

func manyTokens(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("t" + strconv.Itoa(i) + " token-" + strconv.Itoa(1_000_000+i) + "-0123456789\n")
	}
	return b.String()
}

// FuzzParseTokens: a token file is outside input. Whatever it holds,
// parsing either refuses it or returns 1 to maxTokens tokens that each
// pass the token rules, with unique names and tokens.
func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(goodToken))
	f.Add([]byte("alice " + aliceToken + "\nbob " + bobToken))
	f.Add([]byte("# c\n\n a  b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseTokens(b)
		if err != nil {
			return
		}
		if len(ts) == 0 || len(ts) > maxTokens {
			t.Fatalf("%d tokens", len(ts))
		}
		names, toks := map[string]bool{}, map[string]bool{}
		for _, nt := range ts {
			if checkToken(nt.token) != nil || nt.name == "" || names[nt.name] || toks[nt.token] {
				t.Fatalf("accepted %+v", nt)
			}
			names[nt.name], toks[nt.token] = true, true
		}
	})
}

// TestClientKeys: a call that sends a client key is that client of its
// principal: the same key is the same client in every call, two keys two
// clients, and a key never leaves its holder's principal (a token's
// client is not the local principal's). A malformed key is refused.
func TestClientKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte("alice "+aliceToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyA, keyB := strings.Repeat("a", principal.MinClientKeyLength), strings.Repeat("b", principal.MinClientKeyLength)
	whoWith := func(c Config, key string) (string, error) {
		conn, err := c.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if key != "" {
			ctx = principal.WithClientKey(ctx, key)
		}
		resp, err := sandboxv1.NewSandboxServiceClient(conn).HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
		return resp.GetKubernetesContext(), err
	}
	scoped := func(base principal.Principal, key string) string {
		p, err := base.WithClient(key)
		if err != nil {
			t.Fatal(err)
		}
		return p.String()
	}
	local := serveWhoAmI(t, Config{})
	withTokens := serveWhoAmI(t, Config{TokenPath: file})
	withTokens.Token = aliceToken
	for _, tc := range []struct {
		c    Config
		key  string
		want string
	}{
		{local, "", "local"},
		{local, keyA, scoped(principal.Local(), keyA)},
		{local, keyB, scoped(principal.Local(), keyB)},
		{withTokens, "", "token:alice"},
		{withTokens, keyA, scoped(principal.Token("alice"), keyA)},
	} {
		got, err := whoWith(tc.c, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("key %.4s…: principal %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	if a, b := scoped(principal.Local(), keyA), scoped(principal.Token("alice"), keyA); a == b || !strings.HasSuffix(a, "@local") || !strings.HasSuffix(b, "@token:alice") {
		t.Errorf("one key, two principals: %q and %q", a, b)
	}
	for _, bad := range []string{"short", strings.Repeat("x", principal.MaxClientKeyLength+1), strings.Repeat("x", 40) + " y"} {
		if _, err := whoWith(local, bad); status.Code(err) != codes.Unauthenticated {
			t.Errorf("key %.10q…: %v, want UNAUTHENTICATED", bad, err)
		}
	}
}
