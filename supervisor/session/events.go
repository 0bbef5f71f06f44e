package session

import (
	"context"
	"iter"

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
func (m *Manager) Subscribe(ctx context.Context, owner principal.Principal, id string, from int64) (iter.Seq2[eventlog.Entry[*Event], error], error) {
	s, err := m.logOf(owner, id)
	if err != nil {
		return nil, err
	}
	return s.log.Subscribe(ctx, from), nil
}
