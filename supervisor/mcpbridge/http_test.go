package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// tokenBridge returns a bridge served over HTTP and the token set of one
// token, tok, named alice.
func tokenBridge(t *testing.T, tok string) (*Bridge, *transport.TokenSet) {
	t.Helper()
	return tokensBridge(t, tok)
}

// tokensBridge is tokenBridge with tokens toks, named t0, t1, ... (the
// first alice).
func tokensBridge(t *testing.T, toks ...string) (*Bridge, *transport.TokenSet) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	lines := ""
	for i, tok := range toks {
		name := fmt.Sprintf("t%d", i)
		if i == 0 {
			name = "alice"
		}
		lines += name + " " + tok + "\n"
	}
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
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
	return b, tokens
}

// TestHTTPSessionCap: past MaxSessions a new session is refused (503);
// a session closed by its client (DELETE) frees its place at once.
func TestHTTPSessionCap(t *testing.T) {
	// Three tokens, each within its own share (TokenSessionCap(2) = 1).
	const tok1, tok2, tok = "cap-test-token-1123456789abcdef", "cap-test-token-2123456789abcdef", "cap-test-token-0123456789abcdef"
	b, tokens := tokensBridge(t, tok1, tok2, tok)
	srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens, MaxSessions: 2}))
	defer srv.Close()
	defer b.Close()
	connectWith := func(tok string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "cap", Version: "1"}, nil)
		return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearerRT{token: tok}}, MaxRetries: -1}, nil)
	}
	connect := func() (*mcp.ClientSession, error) { return connectWith(tok) }
	s1, err := connectWith(tok1)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := connectWith(tok2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s3, err := connect(); err == nil {
		s3.Close()
		t.Fatal("a third session opened past MaxSessions 2")
	}
	// Raw initialize bodies past the cap: refused, and no session id is
	// issued. The SDK matches JSON keys case-sensitively; a cap that
	// decoded with encoding/json took the later "Method" and let the
	// initialize through (red-team F3).
	const params = `"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`
	for _, tc := range []struct {
		name string
		body string
		want []int // statuses accepted
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize",` + params + `}`, []int{http.StatusServiceUnavailable}},
		{"a later Method key", `{"jsonrpc":"2.0","id":1,"method":"initialize",` + params + `,"Method":"ping"}`, []int{http.StatusBadRequest}},
		{"an earlier METHOD key", `{"jsonrpc":"2.0","id":1,"METHOD":"ping","method":"initialize",` + params + `}`, []int{http.StatusBadRequest}},
		{"an escaped Method key", `{"jsonrpc":"2.0","id":1,"method":"initialize",` + params + `,"\u004dethod":"ping"}`, []int{http.StatusBadRequest}},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize",` + params + `}]`, []int{http.StatusBadRequest, http.StatusServiceUnavailable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if id := resp.Header.Get(sessionHeader); id != "" {
				t.Errorf("a session %s opened past MaxSessions 2 (HTTP %d)", id, resp.StatusCode)
			}
			if !slices.Contains(tc.want, resp.StatusCode) {
				t.Errorf("HTTP %d %q, want one of %v", resp.StatusCode, msg, tc.want)
			}
		})
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

// TestHTTPSessionCapPerToken: one token holds at most TokenSessionCap
// of MaxSessions (a quarter) at once: past it its initialize is 503
// naming the share, while another token still opens sessions; a session
// the token closes frees its place. (A red-team pass held all 64
// sessions with one token by pinging them, and every other token's
// initialize got 503.)
func TestHTTPSessionCapPerToken(t *testing.T) {
	const alice, bob = "share-test-token-a123456789abcdef", "share-test-token-b123456789abcdef"
	b, tokens := tokensBridge(t, alice, bob)
	srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens, MaxSessions: 8}))
	defer srv.Close()
	defer b.Close()
	share := TokenSessionCap(8)
	if share != 2 {
		t.Fatalf("TokenSessionCap(8) = %d, want 2", share)
	}
	var held []string
	for i := range share {
		code, h, _ := postRaw(t, srv.URL, "", alice, rawInitialize)
		if code != http.StatusOK || h.Get(sessionHeader) == "" {
			t.Fatalf("alice's session %d: HTTP %d", i+1, code)
		}
		held = append(held, h.Get(sessionHeader))
	}
	code, h, m := postRaw(t, srv.URL, "", alice, rawInitialize)
	if code != http.StatusServiceUnavailable || h.Get(sessionHeader) != "" || !strings.Contains(fmt.Sprint(m), "one token holds at most 2 of this server's 8") {
		t.Errorf("alice past her share: HTTP %d %v, want 503 naming the share", code, m)
	}
	if code, h, _ := postRaw(t, srv.URL, "", bob, rawInitialize); code != http.StatusOK || h.Get(sessionHeader) == "" {
		t.Errorf("bob while alice holds her share: HTTP %d, want a session", code)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set(sessionHeader, held[0])
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, h, _ := postRaw(t, srv.URL, "", alice, rawInitialize); code != http.StatusOK || h.Get(sessionHeader) == "" {
		t.Errorf("alice after closing one: HTTP %d, want a session", code)
	}
}

// TestHTTPConnectionsOfUnauthenticatedAndSlowClients: a request without
// a valid token is answered 401 on a connection then closed (not kept
// alive to hold the server's connection limit), and a body that does not
// arrive within BodyTimeout ends its connection.
func TestHTTPConnectionsOfUnauthenticatedAndSlowClients(t *testing.T) {
	b, tokens := tokenBridge(t, "slow-test-token-0123456789abcdef")
	const bodyTimeout = 200 * time.Millisecond
	srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens, BodyTimeout: bodyTimeout}))
	defer srv.Close()
	defer b.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test only
		return c
	}
	for _, auth := range []string{"", "Authorization: Bearer wrong-token-0123456789abcdef\r\n"} {
		c := dial()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: mcp\r\n"+auth+"\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", auth, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401", auth, resp.StatusCode)
		}
		if n, err := br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("%q: the connection stayed open after 401 (read %d, %v)", auth, n, err)
		}
	}
	c := dial()
	start := time.Now()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: mcp\r\nAuthorization: Bearer slow-test-token-0123456789abcdef\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("a body that never came: status %d, want 408 or a closed connection", resp.StatusCode)
		}
	}
	if took := time.Since(start); took > 10*bodyTimeout+5*time.Second {
		t.Errorf("a body that never came held its connection %v", took)
	}
}

// FuzzInitializes: a body the session cap lets through uncounted is an
// initialize neither to the SDK's decoder (case-sensitive keys) nor to
// encoding/json's (case-insensitive, the last key winning): whichever way
// a message is read, it cannot open a session past the cap.
func FuzzInitializes(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"mEthod":"ping","method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"\u006dethod":"\u0069nitialize"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		counted, err := initializes(r)
		if rest, _ := io.ReadAll(r.Body); !bytes.Equal(rest, body) {
			t.Fatalf("the body was not put back: %q", rest)
		}
		if counted || err != nil {
			return
		}
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
				t.Fatalf("an initialize to the SDK let through uncounted: %q", body)
			}
		}
		var loose struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &loose) == nil && loose.Method == "initialize" {
			t.Fatalf("an initialize to encoding/json let through uncounted: %q", body)
		}
	})
}
