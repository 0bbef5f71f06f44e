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

// Pool is a warm pool of identical, single-use sandboxes. Safe for
// concurrent use.
type Pool struct {
	spec  sandbox.Spec
	size  int
	start StartFunc
	log   hclog.Logger

	// parallel bounds the starts in progress at once.
	parallel int

	ready  chan *sandbox.Sandbox
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	starting int
	failures int
}

// Stats is the pool's state, for HealthCheck and logs.
type Stats struct {
	// Size is the target number of ready sandboxes.
	Size int
	// Ready sandboxes wait for an execution; Starting are being started.
	Ready, Starting int
	// Failures counts sandbox starts that failed since the pool began.
	Failures int
}

// New starts a pool of size sandboxes of spec, filled in the background
// with start, at most one start per CPU at once. size must be > 0.
func New(size int, spec sandbox.Spec, start StartFunc, log hclog.Logger) *Pool {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := &Pool{spec: spec, size: size, start: start, log: log, parallel: min(size, runtime.NumCPU()),
		ready: make(chan *sandbox.Sandbox, size), wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.fill()
	return p
}

// Spec returns the Spec of every sandbox of the pool.
func (p *Pool) Spec() sandbox.Spec { return p.spec }

// Take returns a ready sandbox for a request of spec, or nil when spec is
// not the pool's or none is ready (the caller then starts its own). The
// sandbox is the caller's alone; it must destroy it when done.
func (p *Pool) Take(spec sandbox.Spec) *sandbox.Sandbox {
	if spec != p.spec {
		return nil
	}
	select {
	case sb := <-p.ready:
		p.poke()
		if p.log.IsDebug() {
			s := p.Stats()
			p.log.Debug("warm pool: sandbox taken", "sandbox", sb.ID(), "ready", s.Ready, "starting", s.Starting)
		}
		return sb
	default:
		p.poke()
		return nil
	}
}

// Stats returns the pool's current state.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Size: p.size, Ready: len(p.ready), Starting: p.starting, Failures: p.failures}
}

// Close stops refilling and destroys the ready sandboxes. It waits for a
// start in progress to end.
func (p *Pool) Close() {
	p.cancel()
	<-p.done
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
	results := make(chan error, p.parallel)
	backoff := 50 * time.Millisecond
	for {
		p.mu.Lock()
		for p.ctx.Err() == nil && len(p.ready)+p.starting < p.size && p.starting < p.parallel {
			p.starting++
			wg.Go(func() { results <- p.startOne() })
		}
		p.mu.Unlock()
		select {
		case err := <-results:
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

// startOne starts one sandbox and adds it to the ready ones.
func (p *Pool) startOne() error {
	sb, err := p.start(p.ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
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
