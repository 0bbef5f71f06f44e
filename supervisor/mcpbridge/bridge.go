package mcpbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/principal"
)

// Config configures a Bridge.
type Config struct {
	// Executions serves runSandbox; required.
	Executions sandboxv1.SandboxServiceClient
	// Sessions serves the session tools (create_sandbox...) and the
	// get_sandboxes resource; nil = runSandbox alone.
	Sessions execfarmv1.SessionServiceClient
	// Version is reported to MCP clients.
	Version string
	// Scope names the client each MCP request acts for (StdioScope,
	// HTTPScope); nil = every request acts as the bridge's own principal
	// and nothing ends with a session.
	Scope func(mcp.Request) (Scope, error)
	// Logger receives the bridge's logs (a session's clean-up); nil =
	// none.
	Logger hclog.Logger
	// CleanupTimeout bounds the deletion of an ended session's
	// sandboxes; 0 = DefaultCleanupTimeout.
	CleanupTimeout time.Duration
}

// DefaultCleanupTimeout bounds the deletion of the sandboxes of a client
// whose session ended: each deletion waits for everything in its sandbox
// to be killed and destroyed.
const DefaultCleanupTimeout = 30 * time.Second

// Scope is the client an MCP request acts for.
type Scope struct {
	// Key is the client key the request's gRPC calls carry (package
	// principal: the supervisor makes them that client of the bridge's
	// principal, whose executions and sandboxes no other client sees);
	// "" = the bridge's own principal.
	Key string
	// Ephemeral says the client lives as long as its MCP session: when
	// the session ends, its session sandboxes are deleted (a stdio
	// client; an HTTP session without a token). A client named by a
	// bearer token outlives its sessions; its sandboxes end by
	// delete_sandbox or their lifetime.
	Ephemeral bool
}

// Bridge is an MCP server over a supervisor: Server serves runSandbox
// and, with Config.Sessions, agent-sandbox's session tools, each request
// acting for its client (Config.Scope).
type Bridge struct {
	// Server is the MCP server: run it on a transport (Server.Run), or
	// serve it over HTTP (HTTPHandler).
	Server *mcp.Server

	cfg Config
	log hclog.Logger

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession // ephemeral clients' sessions
	cleanups sync.WaitGroup                        // session watchers and their clean-ups
}

// clientSession is an ephemeral client's MCP session.
type clientSession struct {
	key      string
	inflight int           // requests being handled
	drained  chan struct{} // closed when inflight drops to 0, once asked for
	done     chan struct{} // closed once the ended session's sandboxes are deleted
}

// New returns a Bridge.
func New(cfg Config) (*Bridge, error) {
	if cfg.Executions == nil {
		return nil, errors.New("mcpbridge: Config.Executions is required")
	}
	if cfg.CleanupTimeout <= 0 {
		cfg.CleanupTimeout = DefaultCleanupTimeout
	}
	b := &Bridge{cfg: cfg, log: cfg.Logger, sessions: map[*mcp.ServerSession]*clientSession{}}
	if b.log == nil {
		b.log = hclog.NewNullLogger()
	}
	if err := b.register(); err != nil {
		return nil, err
	}
	return b, nil
}

// NewClientKey returns a random client key (256 bits, hex): what a client
// that lives as long as one process or session is named by.
func NewClientKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// StdioScope is the Scope of a bridge serving one client over stdio: the
// process's own key, its sandboxes deleted when the session ends.
func StdioScope(key string) func(mcp.Request) (Scope, error) {
	return func(mcp.Request) (Scope, error) { return Scope{Key: key, Ephemeral: true}, nil }
}

// scope is the receiving middleware that makes each request act for its
// client: its context carries the client's key to the supervisor, and an
// ephemeral client's session is watched so that its sandboxes are
// deleted when it ends.
func (b *Bridge) scope(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if b.cfg.Scope == nil {
			return next(ctx, method, req)
		}
		sc, err := b.cfg.Scope(req)
		if err != nil {
			return nil, err
		}
		if sc.Key != "" {
			ctx = principal.WithClientKey(ctx, sc.Key)
			if sc.Ephemeral {
				// Its scripts outlive it: the holder's, shared by every
				// ephemeral client (the same user), as cached scripts are
				// reused across sessions.
				ctx = principal.WithSharedScripts(ctx)
			}
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && sc.Ephemeral && sc.Key != "" {
			defer b.track(ss, sc.Key)()
		}
		return next(ctx, method, req)
	}
}

// track counts a request of an ephemeral client's session, watching the
// session from its first request on; the returned func ends the count.
func (b *Bridge) track(ss *mcp.ServerSession, key string) (done func()) {
	b.mu.Lock()
	cs := b.sessions[ss]
	if cs == nil {
		cs = &clientSession{key: key, done: make(chan struct{})}
		b.sessions[ss] = cs
		b.cleanups.Add(1)
		go b.watch(ss, cs)
	}
	cs.inflight++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if cs.inflight--; cs.inflight == 0 && cs.drained != nil {
			close(cs.drained)
			cs.drained = nil
		}
	}
}

// watch waits for an ephemeral client's session to end and for its
// requests still running to return (a create that completes as the
// session ends is then seen), then deletes the client's sandboxes.
func (b *Bridge) watch(ss *mcp.ServerSession, cs *clientSession) {
	defer b.cleanups.Done()
	_ = ss.Wait()
	b.mu.Lock()
	for cs.inflight > 0 {
		ch := make(chan struct{})
		cs.drained = ch
		b.mu.Unlock()
		<-ch
		b.mu.Lock()
	}
	b.mu.Unlock()
	b.DeleteSandboxesOf(cs.key)
	// Only now: cleanedUp finds the session until its sandboxes are gone.
	b.mu.Lock()
	delete(b.sessions, ss)
	b.mu.Unlock()
	close(cs.done)
}

// cleanedUp returns a channel closed once ss has ended and its ephemeral
// client's sandboxes are deleted; nil when ss is no ephemeral client's.
func (b *Bridge) cleanedUp(ss *mcp.ServerSession) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cs := b.sessions[ss]; cs != nil {
		return cs.done
	}
	return nil
}

// DeleteSandboxesOf deletes every session sandbox of the client whose key
// is key, and no one else's: the supervisor lists only that client's. An
// empty key deletes nothing (the bridge's own principal would list its
// clients' sandboxes too). Failures are logged. It returns how many it
// deleted.
func (b *Bridge) DeleteSandboxesOf(key string) int {
	if b.cfg.Sessions == nil || key == "" {
		return 0
	}
	ctx, cancel := context.WithTimeout(principal.WithClientKey(context.Background(), key), b.cfg.CleanupTimeout)
	defer cancel()
	list, err := b.cfg.Sessions.ListSandboxes(ctx, &execfarmv1.ListSandboxesRequest{})
	if err != nil {
		b.log.Warn("list an ended client's sandboxes", "error", err)
		return 0
	}
	n := 0
	for _, sb := range list.GetSandboxes() {
		if _, err := b.cfg.Sessions.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: sb.GetSandboxId()}); err != nil {
			b.log.Warn("delete an ended client's sandbox", "sandbox", sb.GetSandboxId(), "error", err)
			continue
		}
		n++
	}
	if n > 0 {
		b.log.Info("deleted the sandboxes of an ended MCP client", "count", n)
	}
	return n
}

// Close ends every MCP session of the server (their ephemeral clients'
// sandboxes are deleted) and returns once every clean-up has finished.
func (b *Bridge) Close() {
	for ss := range b.Server.Sessions() {
		_ = ss.Close()
	}
	b.Wait()
}

// Wait returns once the clean-ups of the sessions that have ended are
// done (a stdio server: after Server.Run returns).
func (b *Bridge) Wait() {
	b.cleanups.Wait()
}
