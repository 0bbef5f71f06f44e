package goja

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	gojavm "github.com/dop251/goja"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja_nodejs/eventloop"

	"github.com/execfarm/execfarm/runtime/deterministic"
	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// maxCallStackSize bounds goja's call stack (frames); deeper recursion
// throws "RangeError: Maximum call stack size exceeded".
const maxCallStackSize = 10000

// Exit codes returned by Run besides the code passed to process.exit.
const (
	// ExitOK means the program ran to completion: the event loop had no
	// more work.
	ExitOK = 0
	// ExitUncaught means an uncaught exception or an unhandled promise
	// rejection (or a program goja could not compile), as in Node.
	ExitUncaught = 1
	// ExitCancelled means the context was cancelled (128 + SIGINT, as a
	// shell reports an interrupted command).
	ExitCancelled = 130
	// ExitUnsettled means the event loop ran out of work while the
	// program's top level still waited (an await on a promise nothing
	// will settle): node's exit code for an unsettled top-level await.
	ExitUnsettled = 13
)

// programName is the script name goja reports in stack traces when the
// program carries no source map.
const programName = "main.js"

// Options tunes one Run.
type Options struct {
	// Deterministic gives the program a clock that starts at
	// deterministic.EpochMs (Date.now(), new Date(); performance.now() at
	// 0) and advances only when a timer fires, to the time the timer was
	// due on it, and Math.random from deterministic.NewRand(Seed): node's
	// generator too, so both runtimes print the same. Timers still wait
	// their real delay. false means the real clock and an unpredictable
	// Math.random.
	Deterministic bool
	// Seed seeds Math.random when Deterministic is set; 0 is a valid seed.
	// Ignored otherwise.
	Seed int64
	// Console receives the console channel (package runtime/jsconsole):
	// every console line with its level, and the message of the error
	// that ended the program. nil = no channel.
	Console io.Writer
}

// Run executes program and returns its exit code once the event loop has no
// more work: ExitOK, ExitUncaught, ExitCancelled or the code given to
// process.exit.
//
// console.log, info, debug and warn write to stdout, console.error to
// stderr; uncaught errors are reported on stderr as
// "Uncaught <Name>: <message>" followed by the stack. Output is buffered and
// flushed when the event loop goes idle waiting on a timer, at the latest
// flushDelay after it was written, and before Run returns. Cancelling ctx
// interrupts the running script and ends the loop promptly.
func Run(ctx context.Context, program string, stdout, stderr io.Writer, opts Options) (exitCode int) {
	code, _ := execute(ctx, program, stdout, stderr, opts, nil)
	return code
}

// extension adds to a run what RunTests needs; nil for a plain Run. Its
// methods run on the event loop's goroutine.
type extension interface {
	// setup runs after the globals are installed, before the program.
	setup(r *runner) error
	// started runs after the program's first task; completion is the
	// program's completion value (the promise of the top-level async
	// wrapper). Its error is handled like the task's.
	started(r *runner, completion gojavm.Value) error
	// reported receives every uncaught error report written to stderr.
	reported(msg string)
}

// execute is Run with an optional extension; it also returns the runner,
// nil when the program did not start.
func execute(ctx context.Context, program string, stdout, stderr io.Writer, opts Options, ext extension) (exitCode int, _ *runner) {
	if ctx.Err() != nil {
		return ExitCancelled, nil
	}
	out := newStream(stdout)
	errOut := newStream(stderr)
	defer errOut.Close()
	defer out.Close()
	var con *stream
	if opts.Console != nil {
		con = newStream(opts.Console)
		defer con.Close()
	}

	prg, wrapperLine, err := compile(program)
	if err != nil {
		errOut.WriteString("Uncaught " + err.Error() + "\n")
		(&runner{console: con}).record(jsconsole.Thrown, err.Error())
		if ext != nil {
			ext.reported("Uncaught " + err.Error())
		}
		return ExitUncaught, nil
	}

	loop := eventloop.NewEventLoop(eventloop.EnableConsole(false))
	r := &runner{loop: loop, stdout: out, stderr: errOut, console: con, wrapperLine: wrapperLine}
	if ext != nil {
		r.onReport = ext.reported
	}
	stop := func() bool { return true }
	cancelDone := make(chan struct{})
	loop.Run(func(vm *gojavm.Runtime) {
		r.vm = vm
		// Unbounded recursion throws a RangeError, as in V8, instead of
		// growing until the memory limit or the timeout.
		vm.SetMaxCallStackSize(maxCallStackSize)
		// Registered inside Run so that StopNoWait finds the loop running.
		stop = context.AfterFunc(ctx, func() {
			defer close(cancelDone)
			vm.Interrupt(errCancelled)
			loop.StopNoWait()
		})
		err := r.setup(opts)
		if err == nil && ext != nil {
			err = ext.setup(r)
		}
		if err != nil {
			r.report("Uncaught " + err.Error())
			r.finish(ExitUncaught)
			return
		}
		completion, err := vm.RunProgram(prg)
		if err == nil && completion != nil {
			if p, ok := completion.Export().(*gojavm.Promise); ok {
				r.topLevel = p
			}
		}
		if err == nil && ext != nil {
			err = ext.started(r, completion)
		}
		r.endTask(err)
		r.timers.flushIfIdle()
	})
	// false: the cancel callback ran or is running; wait for it so that no
	// goroutine outlives Run.
	cancelled := !stop()
	if cancelled {
		<-cancelDone
	}
	// Terminate cancels the wake-up timer still armed when the loop was
	// stopped early, so that no goroutine outlives Run.
	loop.Terminate()

	switch {
	case r.done:
		return r.exitCode, r
	case cancelled || r.cancelled:
		return ExitCancelled, r
	case ext == nil && r.topLevel != nil && r.topLevel.State() == gojavm.PromiseStatePending:
		// The loop is stopped: nothing runs on its goroutine any more.
		r.report("Warning: Detected unsettled top-level await")
		return ExitUnsettled, r
	default:
		return r.processExitCode(), r
	}
}

// errCancelled is the interrupt value set when ctx is cancelled.
var errCancelled = errors.New("goja: execution cancelled")

// exitRequest is the interrupt value set by process.exit.
type exitRequest struct{ code int }

// compile wraps program for top-level await and compiles it; it returns the
// line of main.js that calls the wrapper. Source maps are read only from
// data: URLs inside the program, never from files. Syntax errors on line 1
// are reported at the user's column, not the wrapped one.
func compile(program string) (*gojavm.Program, int, error) {
	src := wrap(program)
	wrapperLine := strings.Count(src[:strings.LastIndex(src, wrapSuffix)+1], "\n") + 1
	ast, err := parser.ParseFile(nil, programName, src, 0, parser.WithSourceMapLoader(func(string) ([]byte, error) {
		return nil, errors.New("goja: source map files are not read")
	}))
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				if e.Position.Line == 1 && e.Position.Filename == programName && e.Position.Column > len(wrapPrefix) {
					e.Position.Column -= len(wrapPrefix)
				}
			}
		}
		return nil, 0, fmt.Errorf("SyntaxError: %w", err)
	}
	prg, err := gojavm.CompileAST(ast, false)
	return prg, wrapperLine, err
}

// setup installs the globals and the deterministic sources.
func (r *runner) setup(opts Options) error {
	vm := r.vm
	r.started = time.Now()
	if opts.Deterministic {
		r.deterministic = true
		epoch := time.UnixMilli(deterministic.EpochMs)
		vm.SetTimeSource(func() time.Time { return epoch.Add(r.virtual) })
		vm.SetRandSource(deterministic.NewRand(opts.Seed).Float64)
	}
	vm.SetPromiseRejectionTracker(r.trackRejection)
	if err := r.installConsole(); err != nil {
		return err
	}
	if err := r.installTimers(); err != nil {
		return err
	}
	if err := r.installPerformance(); err != nil {
		return err
	}
	return r.installProcess()
}
