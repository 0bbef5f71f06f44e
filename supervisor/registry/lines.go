package registry

import (
	"context"
	"iter"

	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// Line is one console line of a JavaScript program as ProDisco renders it
// (runtime/jsconsole): the text with its prefix, without a trailing
// newline, and whether ProDisco streams it as error output.
type Line = jsconsole.Line

// lineOverhead is what a console line costs beyond its text: its Line in
// the slice (a string header and a flag) and its allocation's rounding,
// bytes. 5000 empty lines thus count 160 KB, not nothing.
const lineOverhead = 32

// lineCost is the bytes a kept line counts against the retention budget.
func lineCost(l Line) int64 { return int64(len(l.Text)) + lineOverhead }

// AppendLines adds console lines to the execution, after those it has, in
// the order given. The caller bounds them (the runtimes' console channel
// has caps of its own); their bytes (lineCost) count against the
// registry's budget like output, and are cut in the retention share
// like output once the execution has ended (shareLocked). Lines appended to a terminal execution are dropped. It
// never blocks on readers.
func (e *Execution) AppendLines(lines []Line) {
	if len(lines) == 0 {
		return
	}
	var n int64
	for _, l := range lines {
		n += lineCost(l)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Terminal() {
		return
	}
	e.lines = append(e.lines, lines...)
	e.lineBytes += n
	e.reg.buffered.Add(n)
	e.wakeLocked()
}

// Lines returns the console lines appended so far. The caller must not
// modify the slice.
func (e *Execution) Lines() []Line {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lines[:len(e.lines):len(e.lines)]
}

// LineEvent is one item of SubscribeLines: lines appended since the last
// event, or, last, the result.
type LineEvent struct {
	// Lines are the next console lines, in order; the subscriber must not
	// modify them.
	Lines []Line
	// Result is set on the final event only.
	Result *Result
}

// SubscribeLines returns an iterator over the execution's console lines
// from the first, as they are appended, followed by one event carrying
// the result; it then ends. When ctx is done first, the iterator yields
// ctx.Err() and ends. Like Subscribe, it queues nothing for the
// subscriber.
func (e *Execution) SubscribeLines(ctx context.Context) iter.Seq2[LineEvent, error] {
	return func(yield func(LineEvent, error) bool) {
		next := 0
		for {
			if err := ctx.Err(); err != nil {
				yield(LineEvent{}, err)
				return
			}
			e.mu.Lock()
			next = min(next, len(e.lines)) // the retention share may have cut them
			lines := e.lines[next:len(e.lines):len(e.lines)]
			next = len(e.lines)
			var res *Result
			var wake chan struct{}
			if e.state.Terminal() {
				r := e.result
				res = &r
			} else {
				if e.notify == nil {
					e.notify = make(chan struct{})
				}
				wake = e.notify
			}
			e.mu.Unlock()
			if len(lines) > 0 && !yield(LineEvent{Lines: lines}, nil) {
				return
			}
			if res != nil {
				yield(LineEvent{Result: res}, nil)
				return
			}
			if len(lines) > 0 {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
			}
		}
	}
}
