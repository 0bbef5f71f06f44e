package pool

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// StartFunc starts one sandbox with the pool's Spec.
type StartFunc func(ctx context.Context) (*sandbox.Sandbox, error)

// PrepareFunc readies a started, or Reset, sandbox for its next execution
// (the warm pool's prepared runtime process).
type PrepareFunc func(ctx context.Context, sb *sandbox.Sandbox) error

// Pool is a warm pool of identical sandboxes, single-use unless reuse > 1
// (Recycle). Safe for concurrent use.
type Pool struct {
	spec    sandbox.Spec
	size    int
	reuse   int
	start   StartFunc
	prepare PrepareFunc
	log     hclog.Logger

	// parallel bounds the starts in progress at once.
	parallel int

	ready  chan *sandbox.Sandbox
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	starting int // starts and recycles in progress
	failures int
	// taken are the sandboxes out for an execution, until Recycle or
	// Discard, and whether each is lent: it may come back (Recycle)
	// rather than be replaced, so the pool counts it as its own.
	taken      map[*sandbox.Sandbox]loan
	recycling  sync.WaitGroup
	recyclingN int // recycles in progress
	resettingN int // taken sandboxes being reset (BeginReset), not yet back
	waitersN   int // Takes waiting for one of those
	// waiting, when set (tests), is called when Take starts to wait for a
	// sandbox being reset or recycled, for at most wait (recycleWait).
	waiting func()
	wait    time.Duration
}

// loan is what a taken sandbox is to the pool.
type loan int

const (
	single    loan = iota // replaced, never back
	lent                  // may come back after a reset
	resetting             // lent, its execution over, being reset (BeginReset)
)

// Stats is the pool's state, for HealthCheck and logs.
type Stats struct {
	// Size is the target number of ready sandboxes.
	Size int
	// Ready sandboxes wait for an execution; Starting are being started
	// (or re-prepared after a reset); InUse were taken and run an
	// execution now.
	Ready, Starting, InUse int
	// Failures counts sandbox starts that failed since the pool began.
	Failures int
}

// New starts a pool of size sandboxes of spec, filled in the background
// with start then prepare, at most one start per CPU at once. Each sandbox
// serves up to reuse executions (values below 1 mean 1: single-use), and
// is prepared again after each reset. size must be > 0.
func New(size, reuse int, spec sandbox.Spec, start StartFunc, prepare PrepareFunc, log hclog.Logger) *Pool {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := &Pool{spec: spec, size: size, reuse: max(1, reuse), start: start, prepare: prepare, log: log, parallel: min(size, runtime.NumCPU()),
		wait:  recycleWait,
		taken: map[*sandbox.Sandbox]loan{},
		ready: make(chan *sandbox.Sandbox, size), wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.fill()
	return p
}

// Spec returns the Spec of every sandbox of the pool.
func (p *Pool) Spec() sandbox.Spec { return p.spec }

// Take returns a ready sandbox for a request of spec, or nil when spec is
// not the pool's or none is ready (the caller then starts its own). The
// sandbox is the caller's alone, at the default CPU weight
// (Sandbox.Foreground); when done, the caller destroys it and calls
// Discard, or resets it and calls Recycle.
func (p *Pool) Take(spec sandbox.Spec) *sandbox.Sandbox {
	if spec != p.spec {
		return nil
	}
	for {
		var sb *sandbox.Sandbox
		select {
		case sb = <-p.ready:
		default:
		}
		if sb == nil {
			break
		}
		if sb = p.live(p.took(sb)); sb != nil {
			return sb
		}
	}
	// None ready. A sandbox being reset or recycled is ready sooner than
	// a new one starts (~25 ms of CPU): wait for it a little, one waiter
	// per such sandbox (the others would wait for nothing). Its
	// execution's result is published before its reset, so a client's
	// next request often arrives meanwhile.
	p.mu.Lock()
	recycling := p.waitersN < p.recyclingN+p.resettingN
	if recycling {
		p.waitersN++
	}
	p.mu.Unlock()
	if recycling {
		defer func() {
			p.mu.Lock()
			p.waitersN--
			p.mu.Unlock()
		}()
		t := time.NewTimer(p.wait)
		defer t.Stop()
		if p.waiting != nil {
			p.waiting()
		}
		select {
		case sb := <-p.ready:
			if sb = p.live(p.took(sb)); sb != nil {
				return sb
			}
		case <-t.C:
		case <-p.ctx.Done():
		}
	}
	p.poke()
	return nil
}

// live returns sb, just taken, if its worker is still running, at the
// default CPU weight; otherwise (its fork server died, say) it destroys
// sb, lets the pool replace it, and returns nil.
func (p *Pool) live(sb *sandbox.Sandbox) *sandbox.Sandbox {
	if !sb.Exited() {
		// Its start-up ran at background CPU weight
		// (sandbox.StartInBackground); the execution it now serves must
		// not.
		if err := sb.Foreground(); err != nil {
			p.log.Warn("warm pool: sandbox keeps background CPU weight", "sandbox", sb.ID(), "error", err)
		}
		return sb
	}
	p.log.Warn("warm pool: worker of a ready sandbox has exited; destroying it", "sandbox", sb.ID())
	if err := sb.Close(); err != nil {
		p.log.Warn("warm pool: destroy sandbox", "sandbox", sb.ID(), "error", err)
	}
	p.mu.Lock()
	p.release(sb)
	p.mu.Unlock()
	p.poke()
	return nil
}

// refillDelay is how long the refill of a taken sandbox waits for the
// execution that took it to end (Discard starts it then).
const refillDelay = 100 * time.Millisecond

// recycleWait bounds how long Take waits for a sandbox being reset or
// recycled.
const recycleWait = 20 * time.Millisecond

// took records that sb left the ready ones for an execution.
func (p *Pool) took(sb *sandbox.Sandbox) *sandbox.Sandbox {
	// Lent when it may come back: then it is not replaced yet.
	lend := sb.Uses()+1 < p.reuse
	p.mu.Lock()
	p.taken[sb] = single
	if lend {
		p.taken[sb] = lent
	}
	p.mu.Unlock()
	if !lend {
		// The replacement starts when the execution that took sb ends
		// (Discard), or after refillDelay if it runs longer: a start
		// beside a short execution slows it (cgroup and namespace set-up
		// contend in the kernel with its run and teardown).
		time.AfterFunc(refillDelay, p.poke)
	}
	if p.log.IsDebug() {
		s := p.Stats()
		p.log.Debug("warm pool: sandbox taken", "sandbox", sb.ID(), "ready", s.Ready, "starting", s.Starting, "in_use", s.InUse)
	}
	return sb
}

// release forgets a taken sandbox and reports whether it was lent. The
// caller holds p.mu.
func (p *Pool) release(sb *sandbox.Sandbox) (wasLent bool) {
	l, ok := p.taken[sb]
	if l == resetting {
		p.resettingN--
	}
	delete(p.taken, sb)
	return ok && l != single
}

// lent counts the taken sandboxes that may come back. The caller holds
// p.mu.
func (p *Pool) lent() int {
	n := 0
	for _, l := range p.taken {
		if l != single {
			n++
		}
	}
	return n
}

// BeginReset reports whether sb, taken from the pool, may serve another
// execution after a Reset. If so, the pool counts it as being reset until
// Recycle or Discard: a Take that finds no sandbox ready meanwhile waits
// for it (at most recycleWait) rather than have a new one started.
func (p *Pool) BeginReset(sb *sandbox.Sandbox) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.taken[sb] {
	case lent:
		p.taken[sb] = resetting
		p.resettingN++
		return true
	case resetting:
		return true
	}
	return false
}

// Recycle takes back a sandbox of the pool that has been Reset: it is
// prepared again in the background and rejoins the ready ones; it is
// closed instead when it was not lent (BeginReset), the preparation fails,
// or the pool is closing.
func (p *Pool) Recycle(sb *sandbox.Sandbox) {
	p.mu.Lock()
	ok := p.release(sb) && p.ctx.Err() == nil
	if ok {
		p.starting++
		p.recyclingN++
		p.recycling.Add(1)
	}
	p.mu.Unlock()
	if !ok {
		_ = sb.Close()
		p.poke()
		return
	}
	go func() {
		defer p.recycling.Done()
		err := p.prepare(p.ctx, sb)
		p.mu.Lock()
		p.starting--
		p.recyclingN--
		added := false
		if err == nil && p.ctx.Err() == nil {
			select {
			case p.ready <- sb:
				added = true
			default:
			}
		}
		p.mu.Unlock()
		if !added {
			if err != nil && p.ctx.Err() == nil {
				p.log.Warn("warm pool: recycled sandbox not prepared", "sandbox", sb.ID(), "error", err)
			}
			_ = sb.Close()
			p.poke()
			return
		}
		if p.log.IsDebug() {
			s := p.Stats()
			p.log.Debug("warm pool: sandbox recycled", "sandbox", sb.ID(), "uses", sb.Uses(), "ready", s.Ready, "starting", s.Starting)
		}
	}()
}

// Discard tells the pool that a sandbox taken from it was destroyed
// rather than recycled, so that it starts a replacement.
func (p *Pool) Discard(sb *sandbox.Sandbox) {
	p.mu.Lock()
	p.release(sb)
	p.mu.Unlock()
	p.poke() // a lent sandbox's place, or a taken one's deferred refill
}

// Stats returns the pool's current state.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Size: p.size, Ready: len(p.ready), Starting: p.starting, InUse: len(p.taken), Failures: p.failures}
}

// Close stops refilling and destroys the ready sandboxes. It waits for a
// start in progress to end.
func (p *Pool) Close() {
	p.cancel()
	<-p.done
	p.recycling.Wait()
	for {
		select {
		case sb := <-p.ready:
			_ = sb.Close()
		default:
			return
		}
	}
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// fill keeps len(ready) at size, with up to parallel starts at once (a
// burst of executions drains the pool faster than one start at a time
// refills it). After a failed start it backs off (up to 5 s) so that a
// broken host does not spin.
func (p *Pool) fill() {
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		close(p.done)
	}()
	// A start counts in p.starting until its result is read here, so at
	// most parallel results are ever unread: they fit the buffer, and no
	// start blocks on its send (or keeps Close waiting) while fill backs
	// off or has returned.
	results := make(chan error, p.parallel)
	backoff := 50 * time.Millisecond
	for {
		p.mu.Lock()
		for p.ctx.Err() == nil && len(p.ready)+p.starting+p.lent() < p.size && p.starting < p.parallel {
			p.starting++
			wg.Go(func() { results <- p.startOne() })
		}
		p.mu.Unlock()
		select {
		case err := <-results:
			p.mu.Lock()
			p.starting--
			p.mu.Unlock()
			if err == nil {
				backoff = 50 * time.Millisecond
				continue
			}
			if p.ctx.Err() != nil {
				return
			}
			p.log.Warn("warm pool: sandbox start failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
				return
			}
			backoff = min(2*backoff, 5*time.Second)
		case <-p.wake:
		case <-p.ctx.Done():
			return
		}
	}
}

// startOne starts and prepares one sandbox and adds it to the ready ones.
func (p *Pool) startOne() error {
	sb, err := p.start(p.ctx)
	if err == nil {
		if err = p.prepare(p.ctx, sb); err != nil {
			_ = sb.Close()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failures++
		return err
	}
	select {
	case p.ready <- sb:
	default:
		_ = sb.Close() // cannot happen: ready + starting <= size
	}
	if p.log.IsDebug() {
		p.log.Debug("warm pool: sandbox ready", append([]any{"sandbox", sb.ID(), "ready", len(p.ready), "starting", p.starting},
			sandbox.LogFields(sb.StartPhases())...)...)
	}
	return nil
}
