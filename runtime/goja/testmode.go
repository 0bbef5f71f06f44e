package goja

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	gojavm "github.com/dop251/goja"

	"github.com/execfarm/execfarm/runtime/testresult"
)

// noTestsError is the summary error of a test run whose program registered
// no test.
const noTestsError = "no tests defined"

// maxTests bounds the tests one run may register, as node's arrays do.
const maxTests = 1 << 24

// errNoModule is returned by the vendored-module loader for a name it does
// not hold.
var errNoModule = errors.New("goja: no such vendored module")

// RunTests runs the test-mode payload (testresult.EncodePayload of
// testresult.Assemble's program: the code under test, then the tests) in
// test mode (ExecuteTest): like Run, but the harness and assert are built
// first, the intrinsics frozen (testresult.Lockdown), the code's global
// test refuses to register and the tests get the harness' test and assert
// as bindings of their own, with uvu 0.5.6's API: test
// (name, fn), test.only, test.skip, test.before, test.after,
// test.before.each, test.after.each and a no-op test.run; assert is
// uvu/assert itself, vendored (ok, is, is.not, equal, type, instance,
// match, snapshot, fixture, throws, unreachable, not and the not.* forms).
// require("uvu") and require("uvu/assert") return the same objects, and
// in the tests a require of a relative path returns the code's module.
//
// The tests register tests at their top level; once it has
// finished (top-level await included) the tests run in registration order,
// each awaited, with uvu's rules: when a test.only exists only those run;
// before hooks run once first, after hooks once last, before.each and
// after.each around every test. A test is bounded only by ctx.
//
// A failed test's error follows package testresult's rule, with one
// difference from node: uvu's diff (the details after the message) is
// omitted when it needs more than maxDiffEdits edits, which jsdiff cannot
// compute in goja in reasonable time; the message itself is always uvu's.
//
// Results go to results as JSON Lines in the format of package testresult,
// each starting with the payload's nonce, one line per test as it ends and
// a summary line last; stdout and stderr
// carry the program's output as in Run. Writing to results is never
// buffered behind user output.
//
// The exit code is ExitOK when every test that ran passed and there was no
// run error; ExitCancelled when ctx was cancelled before the tests
// finished; 1 otherwise: a failed test, no test defined, a throw in the top
// level (then no test runs), a throwing hook, an uncaught exception or
// process.exit before the tests finished.
func RunTests(ctx context.Context, payload string, stdout, stderr, results io.Writer, opts Options) (exitCode int) {
	nonce, program, err := testresult.DecodePayload([]byte(payload))
	if err != nil {
		fmt.Fprintln(stderr, "execfarm-goja:", err)
		return 2
	}
	t := &tester{w: testresult.NewNonceWriter(results, nonce), running: -1}
	code, r := execute(ctx, program, stdout, stderr, opts, t)
	if t.finished {
		return t.exitCode
	}
	// The loop ended before the harness wrote its summary.
	t.loopEnded = true
	cancelled := ctx.Err() != nil && (r == nil || !r.done)
	t.abort(t.stopReason(ctx, cancelled, r))
	if cancelled && code == ExitCancelled {
		return ExitCancelled
	}
	return 1
}

// phase is where a test run stands.
type phase int

const (
	phaseTopLevel phase = iota // the code's top level
	phaseTestsTop              // the tests' top level
	phaseBefore                // test.before hooks
	phaseTests                 // the tests and their each-hooks
	phaseAfter                 // test.after hooks
)

// tester is the Go side of the harness (testresult.Harness). Its methods run on
// the event loop's goroutine, except stopReason and abort, which run after
// the loop ended.
type tester struct {
	w      *testresult.Writer
	r      *runner
	loader *moduleLoader
	start  gojavm.Callable // the harness' start(completion)

	phase   phase
	names   []string // every registered test, in order; set by plan
	runs    []bool   // whether names[i] runs (not skipped)
	next    int      // first index of names not yet reported
	running int      // index of the running test, -1 when none
	began   time.Time
	sum     testresult.Summary

	uncaught  string // the first uncaught error report, without "Uncaught "
	finished  bool   // the summary line was written
	exitCode  int    // valid once finished
	loopEnded bool   // set by RunTests once the event loop has returned
}

// setup installs the code's test and assert, builds the harness and
// freezes the intrinsics (extension.setup).
func (t *tester) setup(r *runner) error {
	t.r = r
	vm := r.vm
	t.loader = newModuleLoader(vm)
	assert, err := t.loader.load("uvu/assert")
	if err != nil {
		return fmt.Errorf("install assert: %w", err)
	}
	// The diff library is compiled on the first failure, after the
	// intrinsics and their global bindings are frozen: the code can change
	// nothing it uses (its require and process are the loader's own).
	factory, err := vm.RunScript("harness.js", testresult.Harness)
	if err != nil {
		return fmt.Errorf("compile test harness: %w", err)
	}
	build, ok := gojavm.AssertFunction(factory)
	if !ok {
		return fmt.Errorf("compile test harness: not a function")
	}
	require := vm.Get("require")
	if require == nil {
		require = gojavm.Undefined()
	}
	h, err := build(gojavm.Undefined(), t.host(), assert, require)
	if err != nil {
		return fmt.Errorf("install test harness: %w", err)
	}
	ho := h.ToObject(vm)
	if t.start, ok = gojavm.AssertFunction(ho.Get("start")); !ok {
		return fmt.Errorf("install test harness: no start")
	}
	codeTest := ho.Get("codeTest")
	if err := t.wrapRequire(codeTest, assert); err != nil {
		return err
	}
	global := vm.GlobalObject()
	for name, v := range map[string]gojavm.Value{"test": codeTest, "assert": assert} {
		if err := global.DefineDataProperty(name, v, gojavm.FLAG_FALSE, gojavm.FLAG_FALSE, gojavm.FLAG_FALSE); err != nil {
			return fmt.Errorf("install %s: %w", name, err)
		}
	}
	lockdown, err := vm.RunScript("lockdown.js", testresult.Lockdown)
	if err != nil {
		return fmt.Errorf("compile lockdown: %w", err)
	}
	freeze, ok := gojavm.AssertFunction(lockdown)
	if !ok {
		return fmt.Errorf("compile lockdown: not a function")
	}
	if _, err := freeze(gojavm.Undefined(), assert, ho.Get("test"), codeTest); err != nil {
		return fmt.Errorf("freeze intrinsics: %w", err)
	}
	return nil
}

// wrapRequire makes the code's require("uvu") and require("uvu/assert")
// return the code's test and uvu's assert, and passes other names to the
// installed require. The tests get the harness' require.
func (t *tester) wrapRequire(test, assert gojavm.Value) error {
	vm := t.r.vm
	orig, ok := gojavm.AssertFunction(vm.Get("require"))
	if !ok {
		return nil
	}
	uvu := vm.NewObject()
	_ = uvu.Set("test", test)
	return vm.Set("require", func(call gojavm.FunctionCall) gojavm.Value {
		switch call.Argument(0).String() {
		case "uvu":
			return uvu
		case "uvu/assert":
			return assert
		}
		v, err := orig(call.This, call.Arguments...)
		if err != nil {
			panic(err)
		}
		return v
	})
}

// started hands the top level's promise to the harness, which runs the
// tests once it is fulfilled (extension.started).
func (t *tester) started(_ *runner, completion gojavm.Value) error {
	_, err := t.start(gojavm.Undefined(), completion)
	return err
}

// reported keeps the first uncaught error report (extension.reported).
func (t *tester) reported(msg string) {
	if t.uncaught == "" {
		t.uncaught = firstParagraph(strings.TrimPrefix(msg, "Uncaught "))
	}
}

// firstParagraph drops the stack frames of an error report.
func firstParagraph(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "at ") {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// host is the object through which the harness reports.
func (t *tester) host() *gojavm.Object {
	vm := t.r.vm
	o := vm.NewObject()
	_ = o.SetPrototype(nil)
	index := func(call gojavm.FunctionCall) int {
		i := int(call.Argument(0).ToInteger())
		if i < 0 || i >= len(t.names) {
			panic(vm.NewTypeError("test harness: bad test index"))
		}
		return i
	}
	methods := map[string]func(gojavm.FunctionCall) gojavm.Value{
		"topLevelFailed": func(call gojavm.FunctionCall) gojavm.Value {
			v := call.Argument(0)
			t.r.report("Uncaught " + t.r.describeThrown(v, ""))
			t.abort(t.errorText(v))
			return gojavm.Undefined()
		},
		"none": func(gojavm.FunctionCall) gojavm.Value {
			t.writeSummary(noTestsError)
			return gojavm.Undefined()
		},
		"plan": func(call gojavm.FunctionCall) gojavm.Value {
			n := call.Argument(0).ToInteger()
			if n < 0 || n > maxTests || t.names != nil {
				panic(vm.NewTypeError("test harness: bad plan"))
			}
			t.names, t.runs = make([]string, n), make([]bool, n)
			t.sum.Total = int(n)
			return gojavm.Undefined()
		},
		"declare": func(call gojavm.FunctionCall) gojavm.Value {
			i := index(call)
			t.names[i] = call.Argument(1).String()
			t.runs[i] = call.Argument(2).ToBoolean()
			return gojavm.Undefined()
		},
		"phase": func(call gojavm.FunctionCall) gojavm.Value {
			switch call.Argument(0).String() {
			case "tests":
				t.phase = phaseTestsTop
			case "before":
				t.phase = phaseBefore
			case "after":
				t.phase = phaseAfter
			}
			return gojavm.Undefined()
		},
		"start": func(call gojavm.FunctionCall) gojavm.Value {
			t.phase = phaseTests
			t.running = index(call)
			t.began = time.Now()
			return gojavm.Undefined()
		},
		"pass": func(call gojavm.FunctionCall) gojavm.Value {
			t.report(index(call), testresult.Result{Passed: true, DurationMs: t.elapsedMs()})
			return gojavm.Undefined()
		},
		"fail": func(call gojavm.FunctionCall) gojavm.Value {
			t.report(index(call), testresult.Result{Error: t.errorText(call.Argument(1)), DurationMs: t.elapsedMs()})
			return gojavm.Undefined()
		},
		"skip": func(call gojavm.FunctionCall) gojavm.Value {
			t.report(index(call), testresult.Result{Skipped: true})
			return gojavm.Undefined()
		},
		"hookFailed": func(call gojavm.FunctionCall) gojavm.Value {
			t.abort(call.Argument(0).String() + " hook failed: " + t.errorText(call.Argument(1)))
			return gojavm.Undefined()
		},
		"done": func(gojavm.FunctionCall) gojavm.Value {
			t.writeSummary("")
			return gojavm.Undefined()
		},
		"crashed": func(call gojavm.FunctionCall) gojavm.Value {
			t.abort("test harness failed: " + t.errorText(call.Argument(0)))
			return gojavm.Undefined()
		},
	}
	for name, fn := range methods {
		_ = o.Set(name, fn)
	}
	return o
}

func (t *tester) elapsedMs() int64 { return time.Since(t.began).Milliseconds() }

// report writes the result of test i and counts it.
func (t *tester) report(i int, res testresult.Result) {
	if t.finished || i < t.next {
		return
	}
	res.Name = t.names[i]
	switch {
	case res.Skipped:
		t.sum.Skipped++
	case res.Passed:
		t.sum.Passed++
	default:
		t.sum.Failed++
	}
	// A results channel that fails cannot be reported anywhere else; the
	// exit code still tells the outcome.
	_ = t.w.Result(res)
	t.next = i + 1
	t.running = -1
}

// abort ends the run with reason as its error: the running test fails with
// reason, the tests that did not run fail with "not run: " + reason (the
// skipped ones are reported skipped), and the summary is written. In the
// top-level phase nothing was planned and only the summary is written.
func (t *tester) abort(reason string) {
	if t.finished {
		return
	}
	for i := t.next; i < len(t.names); i++ {
		switch {
		case !t.runs[i]:
			t.report(i, testresult.Result{Skipped: true})
		case i == t.running:
			t.report(i, testresult.Result{Error: reason, DurationMs: t.elapsedMs()})
		default:
			t.report(i, testresult.Result{Error: "not run: " + reason})
		}
	}
	t.writeSummary(reason)
}

// writeSummary writes the summary line with errMsg and ends the loop.
func (t *tester) writeSummary(errMsg string) {
	if t.finished {
		return
	}
	t.finished = true
	t.sum.Error = errMsg
	if errMsg == "" && t.sum.Failed == 0 {
		t.exitCode = ExitOK
	} else {
		t.exitCode = 1
	}
	_ = t.w.Summary(t.sum)
	// Pending timers of the program must not keep a finished run alive.
	if t.r != nil && !t.loopEnded && !t.r.done {
		t.r.finish(t.exitCode)
	}
}

// stopReason says why the event loop ended before the summary was written.
func (t *tester) stopReason(ctx context.Context, cancelled bool, r *runner) string {
	const hang = "the event loop ran out of work while it awaited a promise that never settles"
	switch {
	case t.uncaught != "":
		return t.uncaught
	case cancelled && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "execution timed out before the tests finished"
	case cancelled:
		return "execution cancelled before the tests finished"
	case r != nil && r.done:
		return fmt.Sprintf("process.exit(%d) called before the tests finished", r.exitCode)
	}
	switch {
	case t.phase == phaseTopLevel:
		return "the code's top level never finished: " + hang
	case t.phase == phaseTestsTop:
		return "the tests' top level never finished: " + hang
	case t.phase == phaseBefore:
		return "a test.before hook never finished: " + hang
	case t.phase == phaseAfter:
		return "a test.after hook never finished: " + hang
	case t.running >= 0:
		return fmt.Sprintf("test %q never finished: %s", t.names[t.running], hang)
	default:
		return "the tests never finished: " + hang
	}
}

// errorText is the error reported for a thrown value, by the rule in
// package testresult: an uvu Assertion's message and short details, an
// Error's "name: message", a string itself, anything else inspected.
func (t *tester) errorText(v gojavm.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "(a value whose description threw)"
		}
	}()
	if v == nil || gojavm.IsUndefined(v) {
		return "undefined"
	}
	if str, ok := v.Export().(string); ok {
		if _, isObj := v.(*gojavm.Object); !isObj {
			return str
		}
	}
	o, ok := v.(*gojavm.Object)
	if !ok || !isError(o) {
		return t.r.inspectValue(v)
	}
	name, msg := stringProp(o, "name"), stringProp(o, "message")
	if name == "Assertion" {
		details := strings.TrimRight(stringProp(o, "details"), "\n")
		if details != "" && len(details) <= testresult.DetailsMaxBytes {
			return msg + "\n" + details
		}
		return msg
	}
	switch {
	case msg == "":
		return name
	case name == "":
		return msg
	default:
		return name + ": " + msg
	}
}

// stringProp is o[key] when it is a string primitive, else "".
func stringProp(o *gojavm.Object, key string) string {
	v := o.Get(key)
	if v == nil {
		return ""
	}
	if _, isObj := v.(*gojavm.Object); isObj {
		return ""
	}
	s, _ := v.Export().(string)
	return s
}
