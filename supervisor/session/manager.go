package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxSandboxes is the server's default limit on live session
	// sandboxes (--max-sandboxes).
	DefaultMaxSandboxes = 16
	// DefaultLifetime is a sandbox's lifetime when its creator names
	// none: seed 001's shutdown_after_seconds default.
	DefaultLifetime = 300 * time.Second
	// DefaultMaxLifetime is the default ceiling on lifetimes
	// (--sandbox-max-lifetime).
	DefaultMaxLifetime = 24 * time.Hour
	// DefaultMaxExecs is how many execs one sandbox holds at once
	// (pending and running), by default.
	DefaultMaxExecs = 16
	// DefaultEndedRetention is how long an ended sandbox's event log
	// stays readable.
	DefaultEndedRetention = 5 * time.Minute
	// PerPrincipalShare is the default limit on one principal's
	// sandboxes as a divisor of MaxSandboxes: a quarter, so that one
	// principal leaves room for others (DefaultPerPrincipal).
	PerPrincipalShare = 4
	// drainTimeout bounds how long ending a sandbox waits for its execs
	// to publish their results once everything in it is killed.
	drainTimeout = 30 * time.Second
)

// NoLifetimeCeiling as Config.MaxLifetime lets sandboxes live without
// expiry (shutdown_after_seconds 0).
const NoLifetimeCeiling time.Duration = -1

// Runner runs execs: execution.Runner is one.
type Runner interface {
	// Prepare builds the job of in (execution.Runner.Prepare).
	Prepare(ctx context.Context, in execution.Input) (*execution.Job, error)
	// SubmitIn admits j and runs it in p's sandbox
	// (execution.Runner.SubmitIn).
	SubmitIn(p execution.Placement, j *execution.Job) (*registry.Execution, error)
}

// Config configures a Manager. Backend and Runner are required.
type Config struct {
	// Backend starts the sandboxes.
	Backend Backend
	// Runner runs their execs.
	Runner Runner
	// Ceilings bound what an exec may ask for (timeout, output, CPU
	// time); zero = limits.DefaultCeilings().
	Ceilings limits.Set
	// DefaultRuntime runs the execs of sandboxes created without one;
	// "" = program.Shell.
	DefaultRuntime string
	// MaxSandboxes is how many session sandboxes may live at once on this
	// server (being created or ended count too); 0 = DefaultMaxSandboxes.
	MaxSandboxes int
	// Budget is the node's memory budget, shared with the scheduler: a
	// sandbox holds its memory limit of it from its create to its end,
	// and a create that does not fit, in what is free beyond the memory
	// kept for the scheduler's queue head (budget.Reserve), is refused;
	// nil = none.
	Budget *budget.Budget
	// MaxPerPrincipal is how many of them one principal may hold, its
	// clients' (principal.Principal.Unscoped) counted with its own; 0 =
	// DefaultPerPrincipal(MaxSandboxes).
	MaxPerPrincipal int
	// DefaultLifetime applies when a create names none; 0 =
	// DefaultLifetime (300 s).
	DefaultLifetime time.Duration
	// MaxLifetime is the ceiling on lifetimes; 0 = DefaultMaxLifetime
	// (24 h); NoLifetimeCeiling = none, and then a sandbox may live
	// without expiry.
	MaxLifetime time.Duration
	// MaxExecs is how many execs one sandbox holds at once, pending and
	// running; 0 = DefaultMaxExecs.
	MaxExecs int
	// MaxStdinBytes bounds the standard input held by every exec of
	// every sandbox together (buffered for the programs and waiting for
	// room), bytes; each sandbox's execs hold at most MaxSandboxStdin.
	// 0 = DefaultMaxStdinBytes.
	MaxStdinBytes int64
	// Events bounds each sandbox's event log; zero = eventlog's defaults
	// (4096 events, 2 MiB).
	Events eventlog.Config
	// EndedRetention is how long an ended sandbox's event log stays
	// readable (ReadEvents, Subscribe); 0 = DefaultEndedRetention. At
	// most MaxSandboxes ended logs are kept; past it the oldest go.
	EndedRetention time.Duration
	// IDs makes the sandboxes' ids (the node's, as executions'; share the
	// registry's); nil = an issuer of its own for node "localhost".
	IDs *nodeid.Issuer
	// Metrics counts sandboxes, file bytes and dropped events; nil = none.
	Metrics *metrics.Metrics
	// Logger receives the Manager's logs; nil = none.
	Logger hclog.Logger
	// Now returns the current time; nil = time.Now.
	Now func() time.Time
}

// Manager holds the session sandboxes of one supervisor. Its methods are
// safe for concurrent use.
type Manager struct {
	cfg Config
	log hclog.Logger

	mu       sync.Mutex
	live     map[string]*Sandbox // created and not yet ended (being created: counted in starting)
	starting map[string]int      // creates in progress, per account (quota) key
	nStart   int                 // creates in progress
	ended    []*Sandbox          // ended sandboxes whose logs are kept, oldest first
	// subscribers counts Subscribe's open subscriptions per account
	// (Sandbox.subscribers per sandbox; both under mu).
	subscribers map[string]int
	closed      bool
	creating    sync.WaitGroup // Creates past their reservation
	timers      sync.WaitGroup // expiry and idle callbacks running
	execs       sync.Map       // execution id -> *exec, while the exec is held

	stdinHeld atomic.Int64 // unread stdin bytes of every exec (stdinBudget)
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Backend == nil || cfg.Runner == nil {
		return nil, fmt.Errorf("session: Config needs a Backend and a Runner")
	}
	if cfg.Ceilings == (limits.Set{}) {
		cfg.Ceilings = limits.DefaultCeilings()
	}
	cfg.DefaultRuntime = cmp.Or(cfg.DefaultRuntime, program.Shell)
	cfg.MaxSandboxes = cmp.Or(cfg.MaxSandboxes, DefaultMaxSandboxes)
	cfg.MaxPerPrincipal = cmp.Or(cfg.MaxPerPrincipal, DefaultPerPrincipal(cfg.MaxSandboxes))
	cfg.DefaultLifetime = cmp.Or(cfg.DefaultLifetime, DefaultLifetime)
	cfg.MaxLifetime = cmp.Or(cfg.MaxLifetime, DefaultMaxLifetime)
	cfg.MaxExecs = cmp.Or(cfg.MaxExecs, DefaultMaxExecs)
	cfg.MaxStdinBytes = cmp.Or(cfg.MaxStdinBytes, DefaultMaxStdinBytes)
	cfg.EndedRetention = cmp.Or(cfg.EndedRetention, DefaultEndedRetention)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.IDs == nil {
		cfg.IDs, _ = nodeid.NewIssuer("localhost") // a valid name: never fails
	}
	switch {
	case cfg.MaxSandboxes < 0, cfg.MaxPerPrincipal < 0, cfg.MaxExecs < 0, cfg.MaxStdinBytes < 0:
		return nil, fmt.Errorf("session: negative limit in %+v", cfg)
	case cfg.DefaultLifetime < 0:
		return nil, fmt.Errorf("session: negative default lifetime %v", cfg.DefaultLifetime)
	case cfg.MaxLifetime != NoLifetimeCeiling && cfg.DefaultLifetime > cfg.MaxLifetime:
		return nil, fmt.Errorf("session: default lifetime %v is over the ceiling %v", cfg.DefaultLifetime, cfg.MaxLifetime)
	}
	if next := cfg.Events.OnDrop; cfg.Metrics != nil {
		m := cfg.Metrics
		cfg.Events.OnDrop = func(n int) {
			m.SessionEventsDropped(n)
			if next != nil {
				next(n)
			}
		}
	}
	return &Manager{cfg: cfg, log: cfg.Logger, live: map[string]*Sandbox{}, starting: map[string]int{}, subscribers: map[string]int{}}, nil
}

// DefaultPerPrincipal is the default limit on one principal's sandboxes
// for a server holding maxSandboxes: a PerPrincipalShare of them, at least
// one (4 of the default 16). With the whole of maxSandboxes, one principal
// held every sandbox and every other principal's create was refused
// (red-team pass).
func DefaultPerPrincipal(maxSandboxes int) int {
	return max(1, maxSandboxes/PerPrincipalShare)
}

// Limits returns the server-wide limits in force: MaxSandboxes,
// MaxPerPrincipal, the lifetime ceiling (NoLifetimeCeiling = none),
// MaxExecs.
func (m *Manager) Limits() (maxSandboxes, perPrincipal int, maxLifetime time.Duration, maxExecs int) {
	return m.cfg.MaxSandboxes, m.cfg.MaxPerPrincipal, m.cfg.MaxLifetime, m.cfg.MaxExecs
}

// CreateParams is what a create asks for.
type CreateParams struct {
	// Owner is the creating principal.
	Owner principal.Principal
	// Runtime runs execs that name none; "" = Config.DefaultRuntime.
	Runtime string
	// Limits are the sandbox's, resolved (limits.Resolve) over the
	// server's defaults and within its ceilings.
	Limits limits.Set
	// Labels are for List: at most 32; keys 1 to 63 characters of
	// letters, digits, '.', '_', '/', '-'; values at most 255 bytes of
	// UTF-8.
	Labels map[string]string
	// Lifetime is how long the sandbox lives: nil = Config's default; 0
	// = no expiry (only without a lifetime ceiling).
	Lifetime *time.Duration
	// IdleTimeout ends the sandbox after this long without activity (no
	// exec held, no file operation); 0 = never.
	IdleTimeout time.Duration
	// Profile names the sandbox profile its defaults came from, for its
	// status (package profile resolves it).
	Profile string
	// ScriptsClient is the client of Owner's holder whose script cache
	// the sandbox's execs run cached scripts from and save new code to
	// (cache.Owner.Client): Owner.Client, or "" for the holder's own
	// (a client that asked to share its holder's scripts).
	ScriptsClient string
}

// Create starts a sandbox for p.Owner and returns it once it is ready.
// Errors: *FieldError (labels, lifetime, idle timeout); *QuotaError when
// the server's or the principal's sandbox limit or the lifetime ceiling
// would be exceeded; a *budget.Error when p.Limits.MemoryBytes does not
// fit the node's memory budget (Config.Budget) now, beyond what is kept
// for the execution first in the scheduler's queue; ErrShuttingDown; the Backend's (a sandbox that could
// not start; sandbox.ErrNoIDRange when the uid window is full).
func (m *Manager) Create(ctx context.Context, p CreateParams) (*Sandbox, error) {
	lifetime, err := m.Lifetime(p.Lifetime)
	if err != nil {
		return nil, err
	}
	if p.IdleTimeout < 0 {
		return nil, &FieldError{Field: "idle_timeout_seconds", Reason: "must not be negative"}
	}
	if err := checkLabels(p.Labels); err != nil {
		return nil, err
	}
	owner, account := p.Owner.String(), p.Owner.Unscoped().String()
	if err := m.reserve(account); err != nil {
		return nil, err
	}
	defer m.creating.Done()
	if err := m.cfg.Budget.TryAcquire(p.Limits.MemoryBytes); err != nil {
		m.unreserve(account)
		return nil, fmt.Errorf("session: %w", err)
	}
	box, err := m.cfg.Backend.Start(ctx, p.Limits.Spec())
	m.cfg.Metrics.SessionCreated(err)
	if err != nil {
		m.unreserve(account)
		m.cfg.Budget.Release(p.Limits.MemoryBytes)
		return nil, err
	}
	now := m.cfg.Now()
	s := &Sandbox{
		m: m, id: m.cfg.IDs.New(), owner: owner, account: account, client: p.ScriptsClient, box: box,
		runtime: cmp.Or(p.Runtime, m.cfg.DefaultRuntime), limits: p.Limits, labels: cloneLabels(p.Labels), profile: p.Profile,
		created: now, idle: p.IdleTimeout, lastActivity: now,
		log:   eventlog.New[*Event](m.cfg.Events),
		execs: map[string]*exec{}, done: make(chan struct{}),
	}
	if lifetime > 0 {
		s.expires = now.Add(lifetime)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.appendEvent(&Event{Kind: EventReady})
	m.mu.Lock()
	m.nStart--
	m.starting[account]--
	if m.starting[account] == 0 {
		delete(m.starting, account)
	}
	if m.closed {
		m.mu.Unlock()
		s.cancel()
		_ = box.Close()
		m.cfg.Budget.Release(p.Limits.MemoryBytes)
		return nil, ErrShuttingDown
	}
	m.live[s.id] = s
	s.mu.Lock()
	if lifetime > 0 {
		s.lifeTimer = time.AfterFunc(lifetime, func() { m.expire(s, EndExpired) })
	}
	s.armIdleLocked()
	s.mu.Unlock()
	m.mu.Unlock()
	go m.watch(s)
	m.log.Info("session sandbox created", "sandbox", s.id, "box", box.ID(), "owner", owner, "lifetime", lifetime, "idle_timeout", p.IdleTimeout)
	return s, nil
}

// Lifetime resolves a create's lifetime against the default (asked nil)
// and the ceiling; 0 = no expiry. Errors: a *FieldError for a negative
// lifetime, a *QuotaError for one over the ceiling (or none under one).
func (m *Manager) Lifetime(asked *time.Duration) (time.Duration, error) {
	if asked == nil {
		return m.cfg.DefaultLifetime, nil
	}
	d, ceiling := *asked, m.cfg.MaxLifetime
	switch {
	case d < 0:
		return 0, &FieldError{Field: "shutdown_after_seconds", Reason: "must not be negative"}
	case ceiling == NoLifetimeCeiling:
		return d, nil
	case d == 0 || d > ceiling:
		return 0, m.overCeiling(int64(d / time.Second))
	}
	return d, nil
}

// MaxSeconds is the most seconds a time.Duration holds (9223372036 s,
// about 292 years): a lifetime or idle timeout past it is refused, not
// saturated.
const MaxSeconds = math.MaxInt64 / int64(time.Second)

// LifetimeSeconds is Lifetime for a lifetime as the request gives it,
// in seconds (shutdown_after_seconds): its errors name n as asked, never
// the duration it would convert to. Errors: a *FieldError for a negative
// n, or for one past MaxSeconds when there is no ceiling; a *QuotaError
// for one over the ceiling.
func (m *Manager) LifetimeSeconds(n int64) (time.Duration, error) {
	switch {
	case n < 0:
		return 0, &FieldError{Field: "shutdown_after_seconds", Reason: "must not be negative"}
	case n <= MaxSeconds:
		d := time.Duration(n) * time.Second
		return m.Lifetime(&d)
	}
	if m.cfg.MaxLifetime == NoLifetimeCeiling {
		return 0, &FieldError{Field: "shutdown_after_seconds", Reason: fmt.Sprintf("%d s is over the maximum %d s", n, MaxSeconds)}
	}
	return 0, m.overCeiling(n)
}

// overCeiling is the refusal of a lifetime of asked seconds (0: none).
func (m *Manager) overCeiling(asked int64) error {
	return &QuotaError{Limit: "sandbox lifetime ceiling", Flag: "--sandbox-max-lifetime",
		Max: int64(m.cfg.MaxLifetime / time.Second), Asked: asked, Unit: "s"}
}

// IdleTimeoutSeconds is an idle timeout as the request gives it, in
// seconds (idle_timeout_seconds; 0 = none). Errors: a *FieldError naming
// n for a negative one or one past MaxSeconds.
func IdleTimeoutSeconds(n int64) (time.Duration, error) {
	switch {
	case n < 0:
		return 0, &FieldError{Field: "idle_timeout_seconds", Reason: "must not be negative"}
	case n > MaxSeconds:
		return 0, &FieldError{Field: "idle_timeout_seconds", Reason: fmt.Sprintf("%d s is over the maximum %d s", n, MaxSeconds)}
	}
	return time.Duration(n) * time.Second, nil
}

// reserve counts a create in progress for account (the owner's unscoped
// principal), within the limits.
func (m *Manager) reserve(account string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrShuttingDown
	}
	if n := len(m.live) + m.nStart; n >= m.cfg.MaxSandboxes {
		return &QuotaError{Limit: "limit on sandboxes of this server", Flag: "--max-sandboxes", Max: int64(m.cfg.MaxSandboxes), Asked: int64(n + 1)}
	}
	n := m.starting[account]
	for _, s := range m.live {
		if s.account == account {
			n++
		}
	}
	if n >= m.cfg.MaxPerPrincipal {
		return &QuotaError{Limit: "limit on sandboxes of one principal", Flag: "--max-sandboxes-per-principal", Max: int64(m.cfg.MaxPerPrincipal), Asked: int64(n + 1)}
	}
	m.nStart++
	m.starting[account]++
	m.creating.Add(1)
	return nil
}

func (m *Manager) unreserve(account string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nStart--
	if m.starting[account]--; m.starting[account] == 0 {
		delete(m.starting, account)
	}
}

// owns reports whether caller is s's owner: the principal (or the client
// of one) that created it. Only the owner uses a sandbox: execs, stdin,
// signals, files, events.
func owns(caller principal.Principal, s *Sandbox) bool { return s.owner == caller.String() }

// oversees reports whether caller may see s and end it: its owner, or,
// when caller is a principal itself (no client), the holder of the
// client that owns it (s's account), so that the sandboxes of a client
// that is gone (an MCP bridge killed with SIGKILL, whose random client
// key nobody holds again) do not outlive it beyond its holder's reach. A
// client never oversees another client's sandbox, nor its holder's.
func oversees(caller principal.Principal, s *Sandbox) bool {
	return owns(caller, s) || (caller.Client == "" && !caller.IsZero() && s.account == caller.String())
}

// Get returns owner's live sandbox id. Errors: ErrNotFound (wrapped) for
// an unknown sandbox, an ended one, or another principal's; for an id
// this run of the node's supervisor did not make, what the id says
// instead (nodeid.Issuer.Check): a *nodeid.OtherNodeError, a
// *nodeid.EarlierRunError, or ErrNotFound and nodeid.ErrMalformed.
func (m *Manager) Get(owner principal.Principal, id string) (*Sandbox, error) {
	return m.get(owner, id, owns)
}

// Oversee is Get for a sandbox caller oversees: its own, or, for a
// principal itself (no client), one of its clients' (oversees). Its
// errors are Get's, word for word, for every sandbox caller does not
// oversee.
func (m *Manager) Oversee(caller principal.Principal, id string) (*Sandbox, error) {
	return m.get(caller, id, oversees)
}

func (m *Manager) get(caller principal.Principal, id string, may func(principal.Principal, *Sandbox) bool) (*Sandbox, error) {
	m.mu.Lock()
	s, ok := m.live[id]
	if !ok {
		err := m.endedLocked(caller, id, may)
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Unlock()
	if !may(caller, s) {
		return nil, m.notFound(id)
	}
	return s, nil
}

// endedLocked is get's error for id, not live: an *EndedError for a
// sandbox caller may see (may) that ended within the retention,
// notFound's otherwise.
func (m *Manager) endedLocked(caller principal.Principal, id string, may func(principal.Principal, *Sandbox) bool) error {
	s := m.findEndedLocked(id)
	if s == nil || !may(caller, s) {
		return m.notFound(id)
	}
	// Set before endedSandbox put s in m.ended, under m.mu; never again.
	return &EndedError{ID: id, At: s.endedAt, Reason: s.endReason, Message: s.endMsg, LogUntil: s.endedAt.Add(m.cfg.EndedRetention)}
}

// notFound is the error of a lookup of id that found nothing of the
// caller's (Get).
func (m *Manager) notFound(id string) error {
	if err := m.cfg.IDs.Check(id); err != nil {
		var other *nodeid.OtherNodeError
		var earlier *nodeid.EarlierRunError
		if errors.As(err, &other) || errors.As(err, &earlier) {
			return fmt.Errorf("session: %w", err)
		}
		return fmt.Errorf("sandbox %s: %w: %w", quote.Q(id), ErrNotFound, err)
	}
	return fmt.Errorf("sandbox %s on node %q: %w", quote.Q(id), m.cfg.IDs.Node(), ErrNotFound)
}

// logOf returns the sandbox id of owner, live or ended within the
// retention, for its event log.
func (m *Manager) logOf(owner principal.Principal, id string) (*Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if !ok {
		s = m.findEndedLocked(id)
	}
	if s == nil || !owns(owner, s) {
		return nil, m.notFound(id)
	}
	return s, nil
}

// findEndedLocked returns the ended sandbox id whose log is still kept
// (after pruning past the retention), or nil. The caller holds m.mu.
func (m *Manager) findEndedLocked(id string) *Sandbox {
	m.pruneEndedLocked()
	if i := slices.IndexFunc(m.ended, func(s *Sandbox) bool { return s.id == id }); i >= 0 {
		return m.ended[i]
	}
	return nil
}

// List returns the live sandboxes caller oversees (its own and, for a
// principal itself, its clients'; Info.Owner tells them apart) that
// carry every label of labels, oldest first.
func (m *Manager) List(caller principal.Principal, labels map[string]string) []*Sandbox {
	m.mu.Lock()
	var out []*Sandbox
	for _, s := range m.live {
		if oversees(caller, s) && hasLabels(s.labels, labels) {
			out = append(out, s)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Sandbox) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
	})
	return out
}

// Live returns how many session sandboxes live now (metrics).
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Delete ends the sandbox id that caller oversees (its own, or, for a
// principal itself, one of its clients'): its pending and running execs
// are cancelled, everything in it is killed, it is destroyed. It returns
// how many execs ended CANCELLED. Errors: Oversee's; ErrNotFound
// (wrapped) also for a sandbox another call is already ending.
func (m *Manager) Delete(caller principal.Principal, id string) (int, error) {
	s, err := m.Oversee(caller, id)
	if err != nil {
		return 0, err
	}
	n, ok := s.end(EndDeleted, "by its owner")
	if !ok {
		return 0, fmt.Errorf("sandbox %s is already ending: %w", quote.Q(id), ErrNotFound)
	}
	m.log.Debug("session sandbox deleted", "sandbox", id, "box", s.box.ID())
	return n, nil
}

// Extend sets the time left before the sandbox id that caller oversees
// (its own, or, for a principal itself, one of its clients') expires to
// ttlSeconds from now, shorter or longer than before; 0 = no expiry,
// which only a server without a lifetime ceiling allows. The sandbox's
// whole lifetime, from its creation to the new expiry, stays within the
// ceiling, so that extending it again and again cannot outlive it. The
// idle timeout is unchanged. Errors: Oversee's; a *FieldError
// (ttl_seconds) for a negative ttlSeconds, or one past MaxSeconds without
// a ceiling; a *QuotaError (wrapped) past the ceiling; ErrNotReady
// (wrapped) for a sandbox that is ending.
func (m *Manager) Extend(caller principal.Principal, id string, ttlSeconds int64) (*Sandbox, error) {
	s, err := m.Oversee(caller, id)
	if err != nil {
		return nil, err
	}
	ceiling := m.cfg.MaxLifetime
	switch {
	case ttlSeconds < 0:
		return nil, &FieldError{Field: "ttl_seconds", Reason: "must not be negative"}
	case ttlSeconds > MaxSeconds && ceiling == NoLifetimeCeiling:
		return nil, &FieldError{Field: "ttl_seconds", Reason: fmt.Sprintf("%d s is over the maximum %d s", ttlSeconds, MaxSeconds)}
	case ttlSeconds > MaxSeconds:
		return nil, fmt.Errorf("ttl_seconds %d: %w", ttlSeconds, m.overCeiling(ttlSeconds))
	}
	ttl := time.Duration(ttlSeconds) * time.Second
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateReady {
		return nil, fmt.Errorf("sandbox %s is ending: %w", quote.Q(id), ErrNotReady)
	}
	now := m.cfg.Now()
	if ceiling != NoLifetimeCeiling {
		lived := now.Sub(s.created)
		if ttl == 0 {
			return nil, fmt.Errorf("ttl_seconds 0 (no expiry): %w", m.overCeiling(0))
		}
		if ttl > ceiling-lived {
			asked := int64(lived/time.Second) + ttlSeconds
			return nil, fmt.Errorf("ttl_seconds %d from now would make the sandbox live %d s since its creation %d s ago: %w",
				ttlSeconds, asked, int64(lived/time.Second), m.overCeiling(asked))
		}
	}
	if s.lifeTimer != nil {
		s.lifeTimer.Stop()
	}
	s.expires = time.Time{}
	if ttl > 0 {
		s.expires = now.Add(ttl)
		if s.lifeTimer == nil {
			s.lifeTimer = time.AfterFunc(ttl, func() { m.expire(s, EndExpired) })
		} else {
			s.lifeTimer.Reset(ttl)
		}
	}
	m.log.Debug("session sandbox extended", "sandbox", id, "box", s.box.ID(), "ttl", ttl)
	return s, nil
}

// expiredNow reports whether s's lifetime has passed; if not (Extend
// moved it while its timer fired), it re-arms the timer for the rest.
func (s *Sandbox) expiredNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expires.IsZero() {
		return false
	}
	if left := s.expires.Sub(s.m.cfg.Now()); left > 0 {
		s.lifeTimer.Reset(left)
		return false
	}
	return true
}

// watch ends s, EndFailed, once its worker exits while s is live (an OOM
// kill of the worker, say, when tmpfs pages that belong to no process
// leave it the largest process of the cgroup): such a sandbox can serve
// nothing, and must not hold its quota place, uid range and cgroup until
// its lifetime ends. It returns when s starts ending: at most one watch
// per live sandbox.
func (m *Manager) watch(s *Sandbox) {
	select {
	case <-s.box.WorkerDone():
		m.log.Warn("session sandbox's worker exited; ending the sandbox", "sandbox", s.id, "box", s.box.ID(), "owner", s.owner)
		m.expire(s, EndFailed)
	case <-s.ctx.Done():
	}
}

// expire ends s on its own (lifetime or idle timeout, its worker lost),
// from a timer or watch.
func (m *Manager) expire(s *Sandbox, reason EndReason) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.timers.Add(1)
	m.mu.Unlock()
	defer m.timers.Done()
	if reason == EndIdle && !s.idleNow() || reason == EndExpired && !s.expiredNow() {
		return
	}
	msg := "its lifetime passed"
	switch reason {
	case EndIdle:
		msg = fmt.Sprintf("idle for %s", s.idle)
	case EndFailed:
		msg = "its worker exited (killed by the kernel's OOM killer, or crashed): its files and processes are lost"
	}
	s.end(reason, msg)
}

// ended moves s, destroyed, from the live sandboxes to the ended ones,
// whose logs stay readable for Config.EndedRetention, and gives its
// memory back to the budget.
func (m *Manager) endedSandbox(s *Sandbox) {
	m.mu.Lock()
	delete(m.live, s.id)
	m.ended = append(m.ended, s)
	m.pruneEndedLocked()
	m.mu.Unlock()
	// Wakes the scheduler: not under m.mu.
	m.cfg.Budget.Release(s.limits.MemoryBytes)
}

// pruneEndedLocked forgets the ended sandboxes past EndedRetention, then,
// while more than MaxSandboxes remain, the one that ended first among
// those of the principal (account) with the most: a principal that creates
// and deletes sandboxes in a loop drops its own logs, not another's
// before their retention.
func (m *Manager) pruneEndedLocked() {
	now := m.cfg.Now()
	m.ended = slices.DeleteFunc(m.ended, func(s *Sandbox) bool { return now.Sub(s.endedAt) > m.cfg.EndedRetention })
	for len(m.ended) > m.cfg.MaxSandboxes {
		held := map[string]int{}
		most := 0
		for _, s := range m.ended {
			held[s.account]++
			most = max(most, held[s.account])
		}
		// m.ended is in the order they ended: the first of a principal
		// with the most is the oldest among them.
		i := slices.IndexFunc(m.ended, func(s *Sandbox) bool { return held[s.account] == most })
		m.ended = slices.Delete(m.ended, i, i+1)
	}
}

// Shutdown refuses new sandboxes and ends every live one (reason
// shutdown: their execs are cancelled, everything is destroyed), and
// returns once nothing of them is left. A restart loses them.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.closed = true
	live := make([]*Sandbox, 0, len(m.live))
	for _, s := range m.live {
		live = append(live, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range live {
		wg.Go(func() {
			s.end(EndShutdown, "the supervisor shut down")
			<-s.done
		})
	}
	wg.Wait()
	m.creating.Wait()
	m.timers.Wait()
}
