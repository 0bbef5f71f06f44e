package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execfarm/execfarm/supervisor/transport"
)

// bearerRT adds a bearer token to every request, sent through next
// (nil = http.DefaultTransport).
type bearerRT struct {
	token string
	next  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.next == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return b.next.RoundTrip(r)
}

// TestHTTPSessionCap: past MaxSessions a new session is refused (503);
// a session closed by its client (DELETE) frees its place at once.
func TestHTTPSessionCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	const tok = "cap-test-token-0123456789abcdef"
	if err := os.WriteFile(path, []byte("alice "+tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := transport.ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Executions: &fakeClient{}, Version: "test", Scope: HTTPScope([]byte("secret"))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens, MaxSessions: 2}))
	defer srv.Close()
	defer b.Close()
	connect := func() (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "cap", Version: "1"}, nil)
		return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearerRT{token: tok}}, MaxRetries: -1}, nil)
	}
	s1, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s3, err := connect(); err == nil {
		s3.Close()
		t.Fatal("a third session opened past MaxSessions 2")
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s3, err := connect()
	if err != nil {
		t.Fatalf("a session once one closed: %v", err)
	}
	s3.Close()
}
