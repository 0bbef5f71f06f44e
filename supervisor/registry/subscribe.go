package registry

import (
	"context"
	"iter"
)

// defaultSegLimit is how many write segments an execution remembers for
// ordering stdout against stderr in subscriptions.
const defaultSegLimit = 1024

// MaxEventBytes bounds what one step of a subscription gathers, bytes: a
// subscriber holds at most this much output at a time, however much the
// execution keeps (events are at most this long).
const MaxEventBytes = 256 << 10

// segment records that the writes up to end of stream came next, in write
// order relative to the other stream. Consecutive writes to one stream share
// a segment.
type segment struct {
	stream Stream
	end    int64 // stream offset after the segment's last write
}

// segLog is the bounded record of the interleaving of stdout and stderr
// writes. A subscriber that falls more than limit segments behind loses the
// exact interleaving of what it missed (it still gets every kept byte, stdout
// first), never the bytes.
type segLog struct {
	segs       []segment
	base       uint64   // sequence number of segs[0]
	limit      int      // segments kept at least; 0 => defaultSegLimit
	droppedEnd [2]int64 // per stream, the end of the last forgotten segment
}

func (l *segLog) add(s Stream, end int64) {
	if n := len(l.segs); n > 0 && l.segs[n-1].stream == s {
		l.segs[n-1].end = end
		return
	}
	l.segs = append(l.segs, segment{stream: s, end: end})
	limit := l.limit
	if limit <= 0 {
		limit = defaultSegLimit
	}
	if len(l.segs) > 2*limit {
		drop := len(l.segs) - limit
		for _, sg := range l.segs[:drop] {
			l.droppedEnd[sg.stream] = max(l.droppedEnd[sg.stream], sg.end)
		}
		n := copy(l.segs, l.segs[drop:])
		l.segs = l.segs[:n]
		l.base += uint64(drop)
	}
}

// Event is one item of a subscription: an output chunk, or, last, the result.
type Event struct {
	// Result is set on the final event only; the output fields are then zero.
	Result *Result
	// Stream is the stream Data belongs to.
	Stream Stream
	// Data is a chunk of output that starts and ends on UTF-8 boundaries (for
	// valid UTF-8 output). The subscriber owns it.
	Data []byte
	// Offset is the byte offset of Data[0] in its stream.
	Offset int64
	// Gap is true when bytes of this stream before Offset, not delivered by an
	// earlier event, were dropped by truncation.
	Gap bool
}

// cursor is one subscriber's position.
type cursor struct {
	pos [2]int64 // next offset to deliver, per stream
	seq uint64   // next segment to look at
	gap [2]bool  // dropped bytes were skipped and no event has said so yet
}

// Subscribe returns an iterator over the execution's output from offset 0 on,
// in write order across the two streams, followed by one event carrying the
// result; it then ends. Every kept byte is delivered exactly once; bytes
// dropped by truncation before the subscriber read them show up as Gap. When
// ctx is done first, the iterator yields ctx.Err() and ends.
//
// The subscriber reads the execution's buffers itself: writers never wait for
// it and nothing is queued for it, so a slow subscriber costs no memory.
func (e *Execution) Subscribe(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var c cursor
		for {
			if err := ctx.Err(); err != nil {
				yield(Event{}, err)
				return
			}
			e.mu.Lock()
			events, res, wake := e.collectLocked(&c)
			e.mu.Unlock()
			for _, ev := range events {
				if !yield(ev, nil) {
					return
				}
			}
			if res != nil {
				yield(Event{Result: res}, nil)
				return
			}
			if len(events) > 0 || wake == nil {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
			}
		}
	}
}

// collectLocked gathers the events past c, at most MaxEventBytes of data,
// advancing c. It returns the result once everything has been collected
// from a terminal execution; otherwise, when it gathered nothing, a
// channel closed at the next change.
func (e *Execution) collectLocked(c *cursor) (events []Event, res *Result, wake <-chan struct{}) {
	final := e.state.Terminal()
	budget := int64(MaxEventBytes)
	l := &e.log
	if c.seq < l.base {
		for s := range e.bufs {
			events = e.emitLocked(events, c, Stream(s), l.droppedEnd[s], final, &budget)
		}
		if budget <= 0 {
			return events, nil, nil
		}
		c.seq = l.base
	}
	for i := c.seq; i < l.base+uint64(len(l.segs)); i++ {
		sg := l.segs[i-l.base]
		events = e.emitLocked(events, c, sg.stream, sg.end, final, &budget)
		if budget <= 0 {
			c.seq = i
			return events, nil, nil
		}
	}
	if n := len(l.segs); n > 0 {
		// Stay on the last segment: later writes to its stream extend it.
		c.seq = l.base + uint64(n) - 1
	}
	if final {
		for s, b := range e.bufs {
			events = e.emitLocked(events, c, Stream(s), b.written, true, &budget)
			if budget <= 0 {
				return events, nil, nil
			}
		}
		r := e.result
		return events, &r, nil
	}
	if e.notify == nil {
		e.notify = make(chan struct{})
	}
	return events, nil, e.notify
}

// emitLocked appends the events of stream s from c's position to to, at
// most *budget bytes of data (which it lowers), and advances c.
func (e *Execution) emitLocked(events []Event, c *cursor, s Stream, to int64, final bool, budget *int64) []Event {
	if to <= c.pos[s] || *budget <= 0 {
		return events
	}
	b := e.bufs[s]
	cut := false
	if end := b.pageEnd(c.pos[s], *budget); end < to {
		to, final, cut = end, false, true
	}
	spans, end, gap := b.read(c.pos[s], to, final)
	for _, sp := range spans {
		events = append(events, Event{Stream: s, Data: sp.data, Offset: sp.off, Gap: sp.gap || c.gap[s]})
		*budget -= int64(len(sp.data))
		c.gap[s] = false
		if sp.gap {
			gap = false // told
		}
	}
	c.gap[s] = c.gap[s] || gap
	c.pos[s] = max(c.pos[s], end)
	if cut {
		*budget = 0 // the rest of this stream comes first next time
	}
	return events
}
