package goja

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	gojavm "github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/eventloop"

	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// runner is the state of one Run. Every field is used on the event loop's
// goroutine only.
type runner struct {
	loop *eventloop.EventLoop
	vm   *gojavm.Runtime
	// topLevel is the promise of the program's top level (its async
	// wrapper), nil when the script threw before returning it.
	topLevel       *gojavm.Promise
	stdout, stderr *stream
	timers         *scheduler
	inspector      *inspector
	process        *gojavm.Object

	// done is set once the program must end: process.exit, an uncaught
	// exception or an unhandled rejection. exitCode is then final.
	done     bool
	exitCode int
	// wrapperLine is the line of main.js that calls the async wrapper.
	wrapperLine int
	// cancelled is set when a task was interrupted by ctx.
	cancelled bool
	// rejected holds promises rejected without a handler, in rejection
	// order; checked after each task, once microtasks have run.
	rejected []*gojavm.Promise
	// onReport, when set, receives every message report writes (RunTests
	// puts it in the test summary).
	onReport func(msg string)
	// started is when the run began: performance.now's origin.
	started time.Time
	// deterministic runs on virtual time (Options.Deterministic): the
	// clock is deterministic.EpochMs plus virtual, which timers advance.
	deterministic bool
	virtual       time.Duration
	// console is the console channel (Options.Console), nil without one;
	// consoleCount applies its caps, recordBuf is reused for records.
	console      *stream
	consoleCount jsconsole.Counter
	recordBuf    []byte
}

// record sends a record of kind k with text on the console channel, if
// the run has one and, for a console line, the caps admit it.
func (r *runner) record(k jsconsole.Kind, text string) {
	if r.console == nil || (k != jsconsole.Thrown && !r.consoleCount.Admit(k, text)) {
		return
	}
	r.recordBuf = jsconsole.Append(r.recordBuf[:0], k, text)
	r.console.WriteString(string(r.recordBuf))
}

// thrownMessage is ProDisco's error text for a thrown value: an Error's
// message, anything else as String(value).
func thrownMessage(v gojavm.Value) (msg string) {
	defer func() {
		if recover() != nil {
			msg = "(a thrown value whose description threw)"
		}
	}()
	if v == nil {
		return ""
	}
	if o, ok := v.(*gojavm.Object); ok && isError(o) {
		if m := o.Get("message"); m != nil && !gojavm.IsUndefined(m) {
			return m.String()
		}
		return ""
	}
	return v.String()
}

// trackRejection is goja's promise rejection tracker (HostPromiseRejectionTracker).
func (r *runner) trackRejection(p *gojavm.Promise, op gojavm.PromiseRejectionOperation) {
	switch op {
	case gojavm.PromiseRejectionReject:
		r.rejected = append(r.rejected, p)
	case gojavm.PromiseRejectionHandle:
		for i, q := range r.rejected {
			if q == p {
				r.rejected = append(r.rejected[:i], r.rejected[i+1:]...)
				break
			}
		}
	}
}

// endTask handles the outcome of one macrotask (the program itself, a timer
// or an immediate): err is what the outermost goja call returned, after the
// microtask queue was drained.
func (r *runner) endTask(err error) {
	if r.done {
		return
	}
	if err != nil {
		var interrupted *gojavm.InterruptedError
		var exception *gojavm.Exception
		var overflow *gojavm.StackOverflowError
		switch {
		case errors.As(err, &overflow):
			// goja's stack overflow cannot be caught from JavaScript;
			// report it as V8 names it.
			r.report("Uncaught RangeError: Maximum call stack size exceeded\n" + overflow.String())
			r.record(jsconsole.Thrown, "Maximum call stack size exceeded")
			r.finish(ExitUncaught)
		case errors.As(err, &interrupted):
			switch v := interrupted.Value().(type) {
			case exitRequest:
				r.finish(v.code)
			default:
				r.cancelled = true
				r.stopLoop()
			}
		case errors.As(err, &exception):
			r.report("Uncaught " + r.describeThrown(exception.Value(), exception.String()))
			r.record(jsconsole.Thrown, thrownMessage(exception.Value()))
			r.finish(ExitUncaught)
		default:
			r.report("Uncaught " + err.Error())
			r.record(jsconsole.Thrown, err.Error())
			r.finish(ExitUncaught)
		}
		return
	}
	if len(r.rejected) > 0 {
		p := r.rejected[0]
		r.rejected = nil
		r.report("Uncaught " + r.describeThrown(p.Result(), ""))
		r.record(jsconsole.Thrown, thrownMessage(p.Result()))
		r.finish(ExitUncaught)
	}
}

// finish ends the program with code: no further task runs.
func (r *runner) finish(code int) {
	r.done = true
	r.exitCode = code
	r.stopLoop()
}

// stopLoop disarms the timers so the event loop runs out of work.
func (r *runner) stopLoop() {
	if r.timers != nil {
		r.timers.stop()
	}
	r.loop.StopNoWait()
}

// report writes msg and a newline to stderr.
func (r *runner) report(msg string) {
	r.stderr.WriteString(strings.TrimRight(msg, "\n") + "\n")
	if r.onReport != nil {
		r.onReport(msg)
	}
}

// describeThrown formats a thrown value the way Node reports it: the stack
// of an Error, else the inspected value. fallback is used when v is nil.
func (r *runner) describeThrown(v gojavm.Value, fallback string) string {
	if v == nil {
		return nodeStack(fallback, r.wrapperLine)
	}
	if o, ok := v.(*gojavm.Object); ok && isError(o) {
		if s := errorStack(o, r.wrapperLine); s != "" {
			return s
		}
	}
	return r.inspectValue(v)
}

// pcSuffix matches goja's program-counter suffix in stack frames: the "(12)"
// in "main.ts:3:9(12)".
var pcSuffix = regexp.MustCompile(`:(\d+):(\d+)\(\d+\)`)

// nodeStack rewrites a goja stack ("\tat f (main.ts:2:9(3))") the way Node
// prints it ("    at f (main.ts:2:9)"). It drops frames of Go functions
// and the frame of the async wrapper's call, on line wrapperLine of
// main.js; 0 keeps every frame.
func nodeStack(s string, wrapperLine int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	wrapperFrame := fmt.Sprintf("\tat %s:%d:", programName, wrapperLine)
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(l, "\tat ") && (strings.HasSuffix(l, "(native)") || (wrapperLine > 0 && strings.HasPrefix(l, wrapperFrame))) {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "\tat "); ok {
			l = "    at " + rest
		}
		kept = append(kept, l)
	}
	return pcSuffix.ReplaceAllString(strings.Join(kept, "\n"), ":$1:$2")
}

// isError reports whether o is an Error object (class Error in goja).
func isError(o *gojavm.Object) bool {
	return o.ClassName() == "Error"
}

// errorStack returns o.stack in Node's layout, or "" if it is not a string.
// Reading stack cannot throw for goja's own errors; a user-defined getter
// that throws yields "".
func errorStack(o *gojavm.Object, wrapperLine int) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	st := o.Get("stack")
	if st == nil {
		return ""
	}
	if _, isObj := st.(*gojavm.Object); isObj {
		return ""
	}
	if _, ok := st.Export().(string); !ok {
		return ""
	}
	return nodeStack(st.String(), wrapperLine)
}
