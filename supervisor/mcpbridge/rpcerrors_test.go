package mcpbridge

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rpcCode returns a JSON-RPC answer's error code (0 and false when it
// has none).
func rpcCode(m map[string]any) (float64, bool) {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, false
	}
	c, ok := e["code"].(float64)
	return c, ok
}

// TestStdioErrorCodes: over stdio a request before initialize is
// answered with JSON-RPC error -32600 (the SDK's plain error went out
// as code 0, no JSON-RPC code), and an unknown method with -32601.
func TestStdioErrorCodes(t *testing.T) {
	rs := startRaw(t, &fakeClient{}, 0)
	rs.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if m := rs.next(t); func() bool { c, ok := rpcCode(m); return !ok || c != -32600 || m["id"] != 1.0 }() {
		t.Errorf("tools/list before initialize: %v, want error -32600", m)
	}
	rs.send(t, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	if m := rs.next(t); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	rs.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	rs.send(t, `{"jsonrpc":"2.0","id":3,"method":"frob/nicate","params":{}}`+"\n")
	if m := rs.next(t); func() bool { c, ok := rpcCode(m); return !ok || c != -32601 }() {
		t.Errorf("unknown method: %v, want error -32601", m)
	}
}

// postRaw POSTs body to url with sid (a session id, "" none) and
// token ("" none); it returns the answer's status, headers and body
// (an event stream's data line for SSE).
func postRaw(t *testing.T, url, sid, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionHeader, sid)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(s, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				s = d
				break
			}
		}
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		m = map[string]any{"text": s}
	}
	return resp.StatusCode, resp.Header, m
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPErrorCodes: over HTTP an unknown method is the JSON-RPC error
// -32601 with HTTP 200, as over stdio (the SDK answered 400 text/plain);
// a request before initialize (without a session) is -32600, with no
// session opened for it (the SDK opened one, uncounted, and answered
// code 0); a 401 carries the challenge WWW-Authenticate: Bearer
// (without it the MCP Inspector falls back to OAuth discovery).
func TestHTTPErrorCodes(t *testing.T) {
	const tok = "rpc-test-token-0123456789abcdef"
	b, tokens := tokenBridge(t, tok)
	srv := httptest.NewServer(b.HTTPHandler(HTTPConfig{Tokens: tokens}))
	defer srv.Close()
	defer b.Close()

	for _, c := range []struct{ token, want string }{{"", "Bearer"}, {"wrong-token-0123456789abcdef", `Bearer error="invalid_token"`}} {
		code, h, _ := postRaw(t, srv.URL, "", c.token, rawInitialize)
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != c.want {
			t.Errorf("token %q: HTTP %d, WWW-Authenticate %q; want 401, %q", c.token, code, h.Get("WWW-Authenticate"), c.want)
		}
	}

	code, h, m := postRaw(t, srv.URL, "", tok, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	if c, ok := rpcCode(m); code != http.StatusBadRequest || !ok || c != -32600 || m["id"] != 7.0 || h.Get("Content-Type") != "application/json" {
		t.Errorf("tools/list before initialize: HTTP %d %q %v; want 400, error -32600", code, h.Get("Content-Type"), m)
	}
	n := 0
	for range b.Server.Sessions() {
		n++
	}
	if n != 0 {
		t.Errorf("%d sessions open after a request before initialize, want 0", n)
	}

	code, h, m = postRaw(t, srv.URL, "", tok, rawInitialize)
	sid := h.Get(sessionHeader)
	if code != http.StatusOK || sid == "" || m["result"] == nil {
		t.Fatalf("initialize: HTTP %d, session %q, %v", code, sid, m)
	}
	if code, _, _ := postRaw(t, srv.URL, sid, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", code)
	}
	code, h, m = postRaw(t, srv.URL, sid, tok, `{"jsonrpc":"2.0","id":"x1","method":"frob/nicate","params":{}}`)
	if c, ok := rpcCode(m); code != http.StatusOK || !ok || c != -32601 || m["id"] != "x1" || h.Get("Content-Type") != "application/json" {
		t.Errorf("unknown method: HTTP %d %q %v; want 200, error -32601", code, h.Get("Content-Type"), m)
	}
	// The session goes on.
	code, _, m = postRaw(t, srv.URL, sid, tok, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if code != http.StatusOK || m["result"] == nil {
		t.Errorf("tools/list after: HTTP %d %v", code, m)
	}
}
