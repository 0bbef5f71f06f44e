package mcpbridge

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/supervisor/transport"
)

// Bounds of MCP over HTTP (HTTPHandler), which anyone who reaches its
// address may call (a bearer token off loopback).
const (
	// DefaultMaxHTTPSessions bounds the MCP sessions open at once; a new
	// session past it is answered 503.
	DefaultMaxHTTPSessions = 64
	// DefaultHTTPSessionTimeout closes a session that has sent nothing
	// for this long (its ephemeral client's sandboxes are then deleted).
	DefaultHTTPSessionTimeout = 30 * time.Minute
	// MaxMessageBytes bounds the body of one HTTP request (an MCP
	// message), bytes; a larger one is answered 413. MaxFileBytes of
	// base64 fits in it. (Over stdio, the transport bounds a line.)
	MaxMessageBytes = 4 << 20
)

// HTTPConfig configures HTTPHandler.
type HTTPConfig struct {
	// Tokens are the bearer tokens a request must carry one of
	// ("Authorization: Bearer TOKEN", else 401); each token's name is a
	// client of its own, whose sandboxes outlive its sessions. nil = no
	// authentication: each MCP session is then an ephemeral client of its
	// own (only for a loopback address: ListenHTTP refuses others).
	Tokens *transport.TokenSet
	// MaxSessions bounds open sessions; 0 = DefaultMaxHTTPSessions.
	MaxSessions int
	// SessionTimeout closes idle sessions; 0 = DefaultHTTPSessionTimeout.
	SessionTimeout time.Duration
	// BodyTimeout bounds the time a request's body may take to arrive,
	// from the end of its headers; past it the connection is closed.
	// 0 = DefaultHTTPBodyTimeout.
	BodyTimeout time.Duration
	// Health is the supervisor's health service: with it GET /healthz
	// and GET /readyz are served without a token (withProbes); nil = no
	// probes.
	Health healthpb.HealthClient
	// Logger logs why /readyz says not ready; nil = not logged.
	Logger hclog.Logger
}

// DefaultHTTPBodyTimeout is HTTPConfig.BodyTimeout's default: 4 MiB
// (MaxMessageBytes) at 150 KiB/s.
const DefaultHTTPBodyTimeout = 30 * time.Second

// clientKeyExtra is the TokenInfo.Extra key of a token's client key.
const clientKeyExtra = "execfarm-client-key"

// HTTPScope is the Scope of a bridge served over HTTP (HTTPHandler): a
// request with a bearer token acts for the token's client (its key is
// derived from the token: the same token is the same client in every
// session and after a restart, and no other token or caller can derive
// it); a request without one acts for its MCP session, an ephemeral client
// whose key secret derives from the session's id (the bridge draws secret
// at start: no client can derive another session's key).
func HTTPScope(secret []byte) func(mcp.Request) (Scope, error) {
	return func(req mcp.Request) (Scope, error) {
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			key, _ := extra.TokenInfo.Extra[clientKeyExtra].(string)
			if key == "" {
				return Scope{}, errors.New("mcpbridge: a token without a client key")
			}
			return Scope{Key: key}, nil
		}
		id := ""
		if ss := req.GetSession(); ss != nil {
			id = ss.ID()
		}
		if id == "" {
			return Scope{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this server serves MCP sessions (Mcp-Session-Id) only"}
		}
		return Scope{Key: derivedKey(secret, "session", id), Ephemeral: true}, nil
	}
}

// derivedKey is a client key: HMAC-SHA256 of kind and id under secret.
func derivedKey(secret []byte, kind, id string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("execfarm mcp " + kind + "\x00" + id))
	return hex.EncodeToString(m.Sum(nil))
}

// tokenKeySecret keys the derivation of a token's client key from the
// token: a fixed label, so that one token is one client whatever the
// bridge process (what makes its sandboxes outlive a restart); the
// token itself is the secret.
const tokenKeySecret = "execfarm mcp token client"

// verifier checks a bearer token against tokens and names its client.
func verifier(tokens *transport.TokenSet) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		name, ok := tokens.Lookup(token)
		if !ok {
			return nil, fmt.Errorf("%w: not one of this server's tokens", auth.ErrInvalidToken)
		}
		// UserID makes the SDK refuse a session's requests made with
		// another token (session hijacking).
		return &auth.TokenInfo{UserID: name, Extra: map[string]any{clientKeyExtra: derivedKey([]byte(token), "token", tokenKeySecret)}}, nil
	}
}

// HTTPHandler serves the bridge as MCP's Streamable HTTP transport (the
// SDK's handler), with hc's authentication and bounds. Configure the
// bridge with HTTPScope. Close the bridge (Bridge.Close) to end its
// sessions.
func (b *Bridge) HTTPHandler(hc HTTPConfig) http.Handler {
	if hc.MaxSessions <= 0 {
		hc.MaxSessions = DefaultMaxHTTPSessions
	}
	if hc.SessionTimeout <= 0 {
		hc.SessionTimeout = DefaultHTTPSessionTimeout
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.Server }, &mcp.StreamableHTTPOptions{
		SessionTimeout: hc.SessionTimeout, MaxRequestBodyBytes: MaxMessageBytes,
	})
	h = b.capSessions(h, hc.MaxSessions)
	if hc.Tokens != nil {
		h = auth.RequireBearerToken(verifier(hc.Tokens), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
		h = closeUnauthenticated(h, hc.Tokens)
	}
	return withProbes(boundBody(h, cmp.Or(hc.BodyTimeout, DefaultHTTPBodyTimeout)), hc.Health, hc.Logger)
}

// closeUnauthenticated sets the challenge of the 401 that answers a
// request carrying none of tokens (WWW-Authenticate: Bearer), and closes
// the connection after answering it: a client without a token cannot keep
// connections open (idle, kept alive) and so hold the server's
// connection limit; it holds one for its headers' time at most.
func closeUnauthenticated(next http.Handler, tokens *transport.TokenSet) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if _, ok := tokens.Lookup(token); !ok || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("Connection", "close")
			// The 401's challenge (RFC 6750 section 3): a bearer token,
			// and no OAuth resource metadata to discover (without the
			// header the MCP Inspector falls back to OAuth discovery).
			challenge := "Bearer"
			if r.Header.Get("Authorization") != "" {
				challenge = `Bearer error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
		}
		next.ServeHTTP(w, r)
	})
}

// boundBody reads a request's body (at most MaxMessageBytes and one
// byte, which the SDK's handler refuses, 413) within timeout of the end
// of its headers, then clears the connection's read deadline, so that a
// response streamed for as long as a tool call runs (server-sent events)
// is not cut by it. A client sending a body a byte at a time holds a
// connection for timeout at most; the connection is then closed.
func boundBody(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
		if err != nil {
			w.Header().Set("Connection", "close")
			http.Error(w, "request body not received in time", http.StatusRequestTimeout)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = &heldBody{Reader: bytes.NewReader(body), b: body}
		next.ServeHTTP(w, r)
	})
}

// sessionHeader is the Streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// sessionCap counts open sessions and requests that may open one, in
// all and per bearer token.
type sessionCap struct {
	mu       sync.Mutex
	max      int
	perToken int               // sessions one token may hold (TokenSessionCap)
	pending  int               // requests without a session id being served
	open     map[string]string // sessions opened through the handler: their token's name ("" none)
	byToken  map[string]int    // open and pending sessions per token name
}

// TokenSessionCap is the share of --max-sessions one bearer token may
// hold open at once: a quarter (at least 1), so that one token's client
// cannot take every session (a red-team pass held all 64 by pinging
// them, and every other token's initialize got 503).
func TokenSessionCap(maxSessions int) int { return max(1, maxSessions/4) }

// capSessions answers 503 to a request that would open a session past
// max. An initialize request without a session id holds a place while it
// is served;
// the session it opens (the response's Mcp-Session-Id) holds one until it
// ends. The count never exceeds max. A DELETE that closes a session frees
// its place and, for an ephemeral client, deletes its sandboxes before
// its answer: a client that closed its session finds it gone.
func (b *Bridge) capSessions(next http.Handler, max int) http.Handler {
	c := &sessionCap{max: max, perToken: TokenSessionCap(max), open: map[string]string{}, byToken: map[string]int{}}
	find := func(id string) *mcp.ServerSession {
		for ss := range b.Server.Sessions() {
			if ss.ID() == id {
				return ss
			}
		}
		return nil
	}
	release := func(id string) {
		c.mu.Lock()
		if name, ok := c.open[id]; ok {
			delete(c.open, id)
			if name != "" {
				c.byToken[name]--
				if c.byToken[name] <= 0 {
					delete(c.byToken, name)
				}
			}
		}
		c.mu.Unlock()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		switch {
		case r.Method == http.MethodDelete && id != "":
			ss := find(id)
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			if ss == nil || sw.code != http.StatusNoContent {
				return // not a session, or not closed (another's)
			}
			// The handler closed the session: its place is free, and its
			// ephemeral client's sandboxes go before the answer does.
			release(id)
			if done := b.cleanedUp(ss); done != nil {
				select {
				case <-done:
				case <-r.Context().Done():
				}
			}
			return
		case r.Method != http.MethodPost:
			next.ServeHTTP(w, r)
			return
		}
		var (
			init bool
			req  *jsonrpc.Request
			err  error
		)
		if id == "" {
			init, req, err = decodePost(r)
		}
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case id != "":
			w, done := methodNotFound(w, callOf(r))
			next.ServeHTTP(w, r)
			done()
			return
		case !init && req != nil && req.IsCall() && req.Method != "server/discover":
			// A call before initialize: the SDK would open a session
			// for it, uncounted, and answer JSON-RPC error code 0.
			// server/discover is the SDK's to answer (protocol
			// negotiation).
			writeRPCError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, notInitialized+" (a request without Mcp-Session-Id must be initialize)")
			return
		case !init:
			w, done := methodNotFound(w, req)
			next.ServeHTTP(w, r)
			done()
			return
		}
		name := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			name = ti.UserID
		}
		c.mu.Lock()
		if len(c.open)+c.pending >= c.max {
			c.mu.Unlock()
			http.Error(w, fmt.Sprintf("too many MCP sessions: this server holds at most %d at once; close one (HTTP DELETE) or retry later", c.max), http.StatusServiceUnavailable)
			return
		}
		if name != "" && c.byToken[name] >= c.perToken {
			c.mu.Unlock()
			http.Error(w, fmt.Sprintf("too many MCP sessions for this token: one token holds at most %d of this server's %d at once; close one (HTTP DELETE) or retry later", c.perToken, c.max), http.StatusServiceUnavailable)
			return
		}
		c.pending++
		if name != "" {
			c.byToken[name]++
		}
		c.mu.Unlock()
		next.ServeHTTP(w, r)
		id = w.Header().Get(sessionHeader)
		var opened *mcp.ServerSession
		if id != "" {
			opened = find(id)
		}
		c.mu.Lock()
		c.pending--
		if opened == nil && name != "" {
			// No session: the token's place is free again.
			if c.byToken[name]--; c.byToken[name] <= 0 {
				delete(c.byToken, name)
			}
		}
		if opened != nil {
			c.open[id] = name
			b.cleanups.Add(1)
			go func() {
				defer b.cleanups.Done()
				_ = opened.Wait()
				release(id)
			}()
		}
		c.mu.Unlock()
	})
}

// initializes reports whether r, a POST without a session, is an MCP
// initialize request: the one that opens a session (a client may send
// others first, e.g. server/discover). It reads the body, at most
// MaxMessageBytes (a larger one is left for the handler to refuse), and
// puts it back for the handler.
//
// The answer must be the SDK's, or the cap is bypassed: the body is
// decoded by the SDK's own decoder (jsonrpc.DecodeMessage), which matches
// keys case-sensitively, where encoding/json would take a later "Method"
// over "method" (red-team F3: {"method":"initialize",...,"Method":"ping"}
// opened sessions without limit). A body that is not one message (a
// batch, or not JSON-RPC) is counted, as the handler refuses or serves
// it. A message with a top-level key that is "method" but for its case
// is refused with an error (ambiguous: the caller answers 400), so that
// no decoder's reading of it matters.
func initializes(r *http.Request) (bool, error) {
	init, _, err := decodePost(r)
	return init, err
}

// decodePost is initializes, also returning the request r carries when
// it is one JSON-RPC request (nil otherwise).
func decodePost(r *http.Request) (bool, *jsonrpc.Request, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > MaxMessageBytes {
		return true, nil, nil // counted: the handler refuses it anyway
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) != nil {
		return true, nil, nil // not one message: the handler refuses or serves it; counted
	}
	for k := range keys {
		if k != "method" && strings.EqualFold(k, "method") {
			return false, nil, fmt.Errorf("ambiguous JSON-RPC message: key %q is %q but for its case", k, "method")
		}
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true, nil, nil // not a JSON-RPC message: the handler refuses it; counted
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false, nil, nil
	}
	return req.Method == "initialize", req, nil
}

// callOf returns the id and method of the JSON-RPC call r's body holds
// (boundBody's, read without a copy and without decoding the params), nil
// when it holds no call: what methodNotFound needs of a request in a
// session, whose body may be a 4 MiB tool call.
func callOf(r *http.Request) *jsonrpc.Request {
	hb, ok := r.Body.(*heldBody)
	if !ok {
		return nil
	}
	var m struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal(hb.b, &m) != nil || m.ID == nil {
		return nil
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return nil
	}
	return &jsonrpc.Request{ID: id, Method: m.Method}
}

// heldBody is a request body boundBody has read: its bytes, read again.
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (*heldBody) Close() error { return nil }

// writeRPCError answers a JSON-RPC error for the request id with HTTP
// status code, as application/json.
func writeRPCError(w http.ResponseWriter, code int, id jsonrpc.ID, rpcCode int64, msg string) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: rpcCode, Message: msg}})
	if err != nil {
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// notInitialized is the error of a request sent before initialize.
const notInitialized = "the MCP session is not initialized: send initialize first"

// methodNotFound answers a call of a method the server does not serve
// with the JSON-RPC error -32601 (HTTP 200, as over stdio), where the
// SDK's handler answers such a call (before protocol 2026-07-28) with
// 400 and a text/plain body that no MCP client reads as an error of the
// call. It recognises the SDK's refusal by its text, so that a version
// of the SDK that words it otherwise leaves the answer as it is; req is
// the call (nil: no rewriting).
func methodNotFound(w http.ResponseWriter, req *jsonrpc.Request) (http.ResponseWriter, func()) {
	if req == nil || !req.IsCall() {
		return w, func() {}
	}
	rw := &notFoundWriter{ResponseWriter: w}
	return rw, func() {
		if !rw.held {
			return
		}
		if bytes.HasPrefix(rw.body.Bytes(), []byte(sdkNotHandled)) {
			w.Header().Del("Content-Type")
			w.Header().Del("X-Content-Type-Options")
			writeRPCError(w, http.StatusOK, req.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", req.Method))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(rw.body.Bytes())
	}
}

// sdkNotHandled starts the SDK's refusal of a method it does not serve.
const sdkNotHandled = "JSON RPC not handled"

// notFoundWriter holds back a 400 answer with a text body (at most 4 KiB
// of it) for methodNotFound to rewrite; every other answer passes.
type notFoundWriter struct {
	http.ResponseWriter
	held bool
	body bytes.Buffer
}

func (w *notFoundWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *notFoundWriter) Write(p []byte) (int, error) {
	if w.held {
		if w.body.Len() < 4<<10 {
			w.body.Write(p[:min(len(p), 4<<10-w.body.Len())])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush and Unwrap keep server-sent events streaming through it.
func (w *notFoundWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

func (w *notFoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusWriter records the status a handler answers with (a DELETE's:
// no body is streamed through it).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// HTTPProtection is what guards MCP over HTTP, which ListenHTTP weighs
// against its address. The zero value is neither: loopback only.
type HTTPProtection struct {
	// Tokens is whether every request must carry a bearer token
	// (HTTPConfig.Tokens set).
	Tokens bool
	// TLS is whether connections are served over TLS (the http.Server
	// has a TLSConfig and serves with ServeTLS).
	TLS bool
}

// ListenHTTP listens on addr (host:port) for HTTPHandler. A non-loopback
// address needs both protections: without bearer tokens every caller
// there could run code, and without TLS the tokens would cross the
// network in the clear. It returns an error wrapping
// ErrUnprotectedAddress, naming the missing flags, for a non-loopback
// address that lacks either; a loopback address needs neither. The
// listener is plain TCP: the caller serves TLS on it.
func ListenHTTP(addr string, p HTTPProtection) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: --http %q: %w", addr, err)
	}
	if !isLoopback(host) && (!p.Tokens || !p.TLS) {
		var missing []string
		if !p.Tokens {
			missing = append(missing, "bearer tokens (--http-token-file)")
		}
		if !p.TLS {
			missing = append(missing, "TLS (--http-tls-cert and --http-tls-key)")
		}
		return nil, fmt.Errorf("%w: --http %s is not a loopback address and has no %s", ErrUnprotectedAddress, addr, strings.Join(missing, " and no "))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: %w", err)
	}
	return l, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
