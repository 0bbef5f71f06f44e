package session

import (
	"context"
	"iter"
	"sync"

	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/principal"
)

// Bounds of ReadEvents.
const (
	// DefaultPageEvents and MaxPageEvents bound a page's events.
	DefaultPageEvents = 100
	MaxPageEvents     = 1000
	// MaxPageBytes bounds a page's events by their size (output bytes
	// and bookkeeping); a page holds at least one event.
	MaxPageBytes = 1 << 20
)

// Bounds of Subscribe: subscriptions open at once to one sandbox's
// events, and to the events of one principal's sandboxes (its clients'
// counted with its own, principal.Principal.Unscoped). Past either,
// Subscribe is a *QuotaError. A subscription costs a goroutine and a
// stream, and what it has handed to gRPC and not yet written
// (transport.Reserve bounds that for the whole server).
const (
	MaxSubscribersPerSandbox   = 32
	MaxSubscribersPerPrincipal = 128
)

// Page is a page of a sandbox's event log.
type Page struct {
	// Events are the events read, from the offset asked for.
	Events []eventlog.Entry[*Event]
	// Next is the offset to read next; First the first offset held.
	Next, First int64
	// Ended: the sandbox has ended and Events reach its last event.
	Ended bool
}

// ReadEvents reads a page of the event log of owner's sandbox id, live or
// ended within Config.EndedRetention: up to max events (0 =
// DefaultPageEvents; at most MaxPageEvents) and MaxPageBytes, from offset
// from; from 0, the start of the log, from the oldest event it holds
// (Page.First and the first event's offset then say how many events the
// log's bound pruned before it). Errors: ErrNotFound (wrapped);
// *FieldError (max_events); the log's: *eventlog.DroppedError (from, not
// 0, was dropped: First names the first offset held),
// *eventlog.AheadError, eventlog.ErrInvalidOffset.
func (m *Manager) ReadEvents(owner principal.Principal, id string, from int64, max int) (Page, error) {
	switch {
	case max == 0:
		max = DefaultPageEvents
	case max < 0 || max > MaxPageEvents:
		return Page{}, &FieldError{Field: "max_events", Reason: "want 1 to 1000 (0 = 100)"}
	}
	s, err := m.logOf(owner, id)
	if err != nil {
		return Page{}, err
	}
	entries, next, err := s.log.Read(from, max)
	if err != nil {
		return Page{}, err
	}
	var bytes int64
	for i, e := range entries {
		if bytes += e.Size; bytes > MaxPageBytes && i > 0 {
			entries, next = entries[:i], e.Offset
			break
		}
	}
	first, end, closed := s.log.Bounds()
	return Page{Events: entries, Next: next, First: first, Ended: closed && next == end}, nil
}

// Subscribe follows the event log of owner's sandbox id from offset from
// (0: from the oldest event held, as ReadEvents): the events held from
// there, then new ones live, until the sandbox's last event (the iterator
// then ends) or ctx ends. It yields a *eventlog.DroppedError and ends
// when from (not 0) was pruned or the subscriber is too slow for the
// log's bound (eventlog.Log.Subscribe). Errors before any event:
// ErrNotFound (wrapped).
//
// A subscription counts against MaxSubscribersPerSandbox and
// MaxSubscribersPerPrincipal (past either: a *QuotaError naming the
// bound) from this call until its iterator ends or ctx ends, whichever
// comes first.
func (m *Manager) Subscribe(ctx context.Context, owner principal.Principal, id string, from int64) (iter.Seq2[eventlog.Entry[*Event], error], error) {
	s, err := m.logOf(owner, id)
	if err != nil {
		return nil, err
	}
	account := owner.Unscoped().String()
	m.mu.Lock()
	switch {
	case s.subscribers >= MaxSubscribersPerSandbox:
		m.mu.Unlock()
		return nil, &QuotaError{Limit: "subscribers to this sandbox's events", Max: MaxSubscribersPerSandbox, Asked: int64(s.subscribers) + 1}
	case m.subscribers[account] >= MaxSubscribersPerPrincipal:
		n := m.subscribers[account]
		m.mu.Unlock()
		return nil, &QuotaError{Limit: "subscribers to this principal's sandbox events", Max: MaxSubscribersPerPrincipal, Asked: int64(n) + 1}
	}
	s.subscribers++
	m.subscribers[account]++
	m.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			m.mu.Lock()
			s.subscribers--
			if m.subscribers[account]--; m.subscribers[account] <= 0 {
				delete(m.subscribers, account)
			}
			m.mu.Unlock()
		})
	}
	stop := context.AfterFunc(ctx, release)
	seq := s.log.Subscribe(ctx, from)
	return func(yield func(eventlog.Entry[*Event], error) bool) {
		defer func() {
			stop()
			release()
		}()
		seq(yield)
	}, nil
}
