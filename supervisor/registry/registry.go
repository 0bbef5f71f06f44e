package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/supervisor/nodeid"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultRetentionMs      = 5 * 60 * 1000 // 5 minutes, DESIGN.md "Execution semantics"
	DefaultMaxBufferedBytes = 64 << 20      // 64 MiB
	DefaultSweepIntervalMs  = 1000
	DefaultMaxRetained      = 10000
)

// Config configures a Registry.
type Config struct {
	// RetentionMs is how long a terminal execution stays readable after it
	// ended, milliseconds. Zero => DefaultRetentionMs (5 minutes).
	RetentionMs int64
	// MaxBufferedBytes is the budget for what terminal executions keep:
	// output, console lines (lineCost each), error texts and attachments
	// (Result.Attachment, a test run's results), bytes. Running and
	// pending executions do not count against it (their output is
	// bounded by Meta.MaxOutputBytes per stream, their lines by the
	// runtimes' caps). The budget holds at every moment (but for
	// MinErrorKeep bytes of each error text), and one execution's output
	// never evicts another's result. When an execution ends over the
	// budget, attachments go first, while they keep more than half of
	// the budget: each time the oldest of the account (Meta.Account)
	// whose attachments keep the most bytes, so that a principal's flood
	// of test runs drops its own results first (Result.AttachmentDropped
	// says so). Then what is left is shared equally among accounts, an
	// account's share among its owners (Meta.Owner: its clients), an
	// owner's among its executions' streams, lines and error texts, and
	// what keeps more than its share is cut down to it (shareLocked), so
	// that an account within its equal share is never touched by
	// another's flood. Zero => DefaultMaxBufferedBytes (64 MiB).
	MaxBufferedBytes int64
	// MaxRetained is how many terminal executions are held at most; past
	// it the ones that ended first are forgotten before their retention
	// time. Zero => DefaultMaxRetained (10000).
	MaxRetained int
	// SweepIntervalMs is the period of Run, milliseconds. Zero =>
	// DefaultSweepIntervalMs (1 s).
	SweepIntervalMs int64
	// Now returns the current time; nil => time.Now. Tests pass a fake clock.
	Now func() time.Time
	// IDs makes the executions' ids, which name this node and this run of
	// the supervisor (package nodeid); nil = an Issuer for node
	// "localhost".
	IDs *nodeid.Issuer
	// OnFinish, if set, is called once for each execution that becomes
	// terminal, with its metadata and result, from the goroutine that
	// finished it and with no registry lock held, after readers can see
	// the result. The supervisor logs executions here.
	OnFinish func(Meta, Result)
	// OnResult, if set, is called once for each execution that becomes
	// terminal, with its metadata and result, before any reader can see
	// the result (Done, Wait, Snapshot), under the registry's locks: it
	// must be quick and must not call the registry. Every way of ending
	// passes through it. The supervisor's metrics count executions here,
	// so that a scrape made after a client saw a result counts it.
	OnResult func(Meta, Result)
}

// Registry holds executions by id. It is safe for concurrent use.
type Registry struct {
	retention  time.Duration
	budget     int64
	maxHeld    int
	interval   time.Duration
	now        func() time.Time
	finishHook func(Meta, Result)
	resultHook func(Meta, Result)
	ids        *nodeid.Issuer
	segLimit   int // segments per execution's write log; 0 => defaultSegLimit (tests lower it)

	buffered atomic.Int64 // bytes kept by all executions held

	mu            sync.Mutex
	entries       map[string]*entry
	seq           uint64 // creation counter
	finSeq        uint64 // finish counter
	terminalBytes int64  // bytes kept by terminal executions held
	terminalCount int    // terminal executions held
}

// entry is the registry's bookkeeping for one execution. Its terminal fields
// are set by finishedLocked, under Registry.mu.
type entry struct {
	e          *Execution
	terminal   bool
	finishedAt time.Time
	finSeq     uint64
	parts      [numParts]int64 // bytes kept per part the share may cut (share.go), from finish on
	attached   int64           // bytes of Result.Attachment kept, from finish on
}

func (en *entry) total() int64 {
	t := en.attached
	for _, n := range en.parts {
		t += n
	}
	return t
}

// New returns an empty Registry configured by cfg.
func New(cfg Config) *Registry {
	r := &Registry{
		retention:  time.Duration(cmp.Or(cfg.RetentionMs, DefaultRetentionMs)) * time.Millisecond,
		budget:     cmp.Or(cfg.MaxBufferedBytes, DefaultMaxBufferedBytes),
		maxHeld:    cmp.Or(cfg.MaxRetained, DefaultMaxRetained),
		interval:   time.Duration(cmp.Or(cfg.SweepIntervalMs, DefaultSweepIntervalMs)) * time.Millisecond,
		now:        cfg.Now,
		entries:    make(map[string]*entry),
		finishHook: cfg.OnFinish,
		resultHook: cfg.OnResult,
		ids:        cfg.IDs,
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.ids == nil {
		r.ids, _ = nodeid.NewIssuer("localhost") // a valid name: never fails
	}
	return r
}

// Create registers a new Pending execution described by meta and returns it.
func (r *Registry) Create(meta Meta) *Execution {
	meta.CodePreview = preview(meta.CodePreview)
	if meta.MaxOutputBytes <= 0 {
		meta.MaxOutputBytes = DefaultMaxOutputBytes
	}
	meta.ID = r.ids.New()
	e := &Execution{
		id:      meta.ID,
		meta:    meta,
		reg:     r,
		state:   StatePending,
		created: r.now(),
		bufs:    [2]*outBuf{newOutBuf(meta.MaxOutputBytes), newOutBuf(meta.MaxOutputBytes)},
		log:     segLog{limit: r.segLimit},
		done:    make(chan struct{}),
	}
	r.mu.Lock()
	r.seq++
	e.seq = r.seq
	r.entries[e.id] = &entry{e: e}
	r.mu.Unlock()
	return e
}

// Get returns the execution with id. For an id it does not hold, the
// error says why, from the id itself (package nodeid): an
// *nodeid.OtherNodeError when another node made it, an
// *nodeid.EarlierRunError when this node's supervisor made it before it
// restarted, and else an error wrapping ErrNotFound (and
// nodeid.ErrMalformed when no supervisor could have made it).
func (r *Registry) Get(id string) (*Execution, error) {
	r.mu.Lock()
	en, ok := r.entries[id]
	r.mu.Unlock()
	if ok {
		return en.e, nil
	}
	if err := r.ids.Check(id); err != nil {
		var other *nodeid.OtherNodeError
		var earlier *nodeid.EarlierRunError
		if errors.As(err, &other) || errors.As(err, &earlier) {
			return nil, fmt.Errorf("get execution: %w", err)
		}
		return nil, fmt.Errorf("get execution %q: %w: %w", id, ErrNotFound, err)
	}
	return nil, fmt.Errorf("get execution %s on node %q: %w", quote.Q(id), r.ids.Node(), ErrNotFound)
}

// Node returns the name of the node whose ids the registry makes.
func (r *Registry) Node() string { return r.ids.Node() }

// List returns the executions whose state is in states (empty = all), newest
// first by creation, then cut to limit (0 or negative = no limit). With
// completedWithin > 0, terminal executions that ended longer ago than
// completedWithin are left out; non-terminal ones are always included.
func (r *Registry) List(states []State, limit int, completedWithin time.Duration) []Info {
	return r.ListOwned("", states, limit, completedWithin)
}

// ListOwned is List of the executions whose Meta.Owner is owner ("" =
// every execution), filtered before the limit applies.
func (r *Registry) ListOwned(owner string, states []State, limit int, completedWithin time.Duration) []Info {
	r.mu.Lock()
	execs := make([]*Execution, 0, len(r.entries))
	for _, en := range r.entries {
		execs = append(execs, en.e)
	}
	r.mu.Unlock()
	// Sort before filtering and limiting: seq is fixed at creation.
	slices.SortFunc(execs, func(a, b *Execution) int { return cmp.Compare(b.seq, a.seq) })
	now := r.now()
	var out []Info
	for _, e := range execs {
		if owner != "" && e.meta.Owner != owner {
			continue
		}
		in := e.Info()
		if len(states) > 0 && !slices.Contains(states, in.State) {
			continue
		}
		if completedWithin > 0 && in.State.Terminal() && now.Sub(in.FinishedAt) > completedWithin {
			continue
		}
		out = append(out, in)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// Counts returns the number of pending and running executions.
func (r *Registry) Counts() (pending, running int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, en := range r.entries {
		if en.terminal {
			continue
		}
		switch en.e.State() {
		case StatePending:
			pending++
		case StateRunning:
			running++
		}
	}
	return pending, running
}

// Len returns the number of executions held, terminal ones included.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// BufferedBytes returns the output and attachment bytes kept by all
// executions held, running ones included (their output only: an
// attachment comes with the result).
func (r *Registry) BufferedBytes() int64 { return r.buffered.Load() }

// finishedLocked records that e just became terminal, with r.mu and
// e.mu held (Execution.Finish): it counts e's output, then applies the
// retention count and the output share before e's result can be read.
func (r *Registry) finishedLocked(e *Execution) {
	en, ok := r.entries[e.id]
	if !ok || en.terminal {
		return
	}
	r.finSeq++
	en.terminal, en.finishedAt, en.finSeq = true, e.finished, r.finSeq
	en.parts = [numParts]int64{partStdout: e.bufs[Stdout].kept(), partStderr: e.bufs[Stderr].kept(),
		partLines: e.lineBytes, partError: int64(len(e.result.Error))}
	en.attached = int64(len(e.result.Attachment))
	// Output and lines were counted as written; the error text and the
	// attachment come with the result.
	r.buffered.Add(en.attached + en.parts[partError])
	r.terminalBytes += en.total()
	r.terminalCount++
	r.evictLocked(nil)
	r.dropAttachmentsLocked(e)
	r.shareLocked(e)
}

// finished calls the OnFinish hook for e, with no lock held.
func (r *Registry) finished(e *Execution) {
	if r.finishHook != nil {
		res, _ := e.Result()
		r.finishHook(e.meta, res)
	}
}

// Sweep removes the terminal executions that ended more than the retention
// time ago, then, past MaxRetained terminal executions, those that ended
// first. It returns how many it removed. Running and pending executions
// are never removed, and output or attachments are never the reason for a
// removal (see Config.MaxBufferedBytes).
func (r *Registry) Sweep() int {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var done []*entry
	removed := 0
	for id, en := range r.entries {
		if !en.terminal {
			continue
		}
		if now.Sub(en.finishedAt) > r.retention {
			r.removeLocked(id, en)
			removed++
			continue
		}
		done = append(done, en)
	}
	return removed + r.evictLocked(done)
}

// evictLocked removes terminal executions while more than maxHeld are
// held: each time the one that ended first among those of the account
// (Meta.Account) holding the most, and within it of the owner
// (Meta.Owner, one of its clients) holding the most, so that a principal
// that floods the registry (10 000 executions cancelled while queued take
// it two seconds), or one client of it, evicts its own results, not
// another's. done lists the terminal entries
// (nil: collect them). It returns how many it removed.
func (r *Registry) evictLocked(done []*entry) int {
	if r.terminalCount <= r.maxHeld {
		return 0
	}
	if done == nil {
		for _, en := range r.entries {
			if en.terminal {
				done = append(done, en)
			}
		}
	}
	slices.SortFunc(done, func(a, b *entry) int { return cmp.Compare(a.finSeq, b.finSeq) })
	byAccount := map[string][]*entry{} // each account's, oldest first
	for _, en := range done {
		byAccount[en.e.meta.Account] = append(byAccount[en.e.meta.Account], en)
	}
	removed := 0
	for r.terminalCount > r.maxHeld {
		var most string
		for a, l := range byAccount { // the most held; on a tie, the oldest
			if m := byAccount[most]; len(l) > len(m) || len(l) == len(m) && len(l) > 0 && l[0].finSeq < m[0].finSeq {
				most = a
			}
		}
		l := byAccount[most]
		if len(l) == 0 {
			break
		}
		// Within the account, the oldest of the owner (a client) holding
		// the most: one client's flood evicts its own results, not its
		// holder's other clients'.
		count := map[string]int{}
		for _, en := range l {
			count[en.e.meta.Owner]++
		}
		i := 0
		for j, en := range l { // l is oldest first: the first of the most wins a tie
			if count[en.e.meta.Owner] > count[l[i].e.meta.Owner] {
				i = j
			}
		}
		r.removeLocked(l[i].e.id, l[i])
		byAccount[most] = slices.Delete(l, i, i+1)
		removed++
	}
	return removed
}

// dropAttachmentsLocked drops attachments (Result.Attachment) of terminal
// executions while the terminal executions keep more than the budget and
// their attachments more than half of it: each time the oldest of the
// account whose attachments keep the most bytes (on a tie, the one
// holding the oldest). Output is then shared within what is left
// (shareLocked). It returns the bytes freed.
//
// locked is an execution whose mutex the caller holds (nil: none).
func (r *Registry) dropAttachmentsLocked(locked *Execution) int64 {
	if r.terminalBytes <= r.budget {
		return 0
	}
	var held int64
	var all []*entry
	for _, en := range r.entries {
		if en.terminal && en.attached > 0 {
			held += en.attached
			all = append(all, en)
		}
	}
	if held <= r.budget/2 {
		return 0
	}
	slices.SortFunc(all, func(a, b *entry) int { return cmp.Compare(a.finSeq, b.finSeq) })
	byAccount := map[string][]*entry{} // each account's, oldest first
	bytesOf := map[string]int64{}
	for _, en := range all {
		a := en.e.meta.Account
		byAccount[a] = append(byAccount[a], en)
		bytesOf[a] += en.attached
	}
	var freed int64
	for r.terminalBytes > r.budget && held > r.budget/2 {
		most, found := "", false
		for a, l := range byAccount {
			if len(l) == 0 {
				continue
			}
			if !found || bytesOf[a] > bytesOf[most] || bytesOf[a] == bytesOf[most] && l[0].finSeq < byAccount[most][0].finSeq {
				most, found = a, true
			}
		}
		if !found {
			break
		}
		en := byAccount[most][0]
		byAccount[most] = byAccount[most][1:]
		if en.e == locked {
			locked.dropAttachmentLocked()
		} else {
			en.e.dropAttachment()
		}
		f := en.attached
		en.attached = 0
		bytesOf[most] -= f
		held -= f
		r.terminalBytes -= f
		r.buffered.Add(-f)
		freed += f
	}
	return freed
}

func (r *Registry) removeLocked(id string, en *entry) {
	delete(r.entries, id)
	r.terminalBytes -= en.total()
	r.terminalCount--
	r.buffered.Add(-en.total())
}

// Run calls Sweep every SweepIntervalMs until ctx is done, then returns
// ctx.Err().
func (r *Registry) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			r.Sweep()
		}
	}
}
