package goja

import (
	"fmt"
	"strings"
	"time"

	gojavm "github.com/dop251/goja"

	"github.com/execfarm/execfarm/runtime/deterministic"
	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// installProcess defines a minimal process global (exit, exitCode, env,
// argv, platform, nextTick, and stdout.write and stderr.write, which write
// the string of their argument as is and send it to the console channel as
// a line, one trailing newline dropped, as ProDisco's sandbox does) and a
// require that refuses every module; the allow-listed require is not
// implemented yet.
func (r *runner) installProcess() error {
	vm := r.vm
	p := vm.NewObject()
	r.process = p
	set := map[string]any{
		"env":      vm.NewObject(),
		"argv":     []any{"goja", programName},
		"platform": "linux",
		"exit": func(call gojavm.FunctionCall) gojavm.Value {
			code := ExitOK
			if v := call.Argument(0); !gojavm.IsUndefined(v) {
				code = int(v.ToInteger())
			} else {
				code = r.processExitCode()
			}
			vm.Interrupt(exitRequest{code: code})
			return gojavm.Undefined()
		},
		"nextTick": func(call gojavm.FunctionCall) gojavm.Value {
			return r.timers.queueMicrotask(call)
		},
	}
	writer := func(s *stream, k jsconsole.Kind) *gojavm.Object {
		o := vm.NewObject()
		_ = o.Set("write", func(call gojavm.FunctionCall) gojavm.Value {
			text := call.Argument(0).String()
			s.WriteString(text)
			r.record(k, strings.TrimSuffix(text, "\n"))
			return vm.ToValue(true)
		})
		return o
	}
	set["stdout"] = writer(r.stdout, jsconsole.Log)
	set["stderr"] = writer(r.stderr, jsconsole.Stderr)
	for name, v := range set {
		if err := p.Set(name, v); err != nil {
			return fmt.Errorf("install process.%s: %w", name, err)
		}
	}
	if err := vm.Set("process", p); err != nil {
		return fmt.Errorf("install process: %w", err)
	}
	err := vm.Set("require", func(call gojavm.FunctionCall) gojavm.Value {
		name := call.Argument(0).String()
		ctor, _ := gojavm.AssertConstructor(vm.Get("Error"))
		e, err := ctor(nil, vm.ToValue(fmt.Sprintf("Module '%s' not available in sandbox", name)))
		if err != nil {
			panic(err)
		}
		_ = e.Set("code", "MODULE_NOT_FOUND")
		panic(e)
	})
	if err != nil {
		return fmt.Errorf("install require: %w", err)
	}
	return nil
}

// processExitCode is process.exitCode as an exit code, ExitOK when unset.
func (r *runner) processExitCode() int {
	if r.process == nil {
		return ExitOK
	}
	v := r.process.Get("exitCode")
	if v == nil || gojavm.IsUndefined(v) || gojavm.IsNull(v) {
		return ExitOK
	}
	return int(v.ToInteger())
}

// installPerformance defines performance.now() (milliseconds since the
// run began, fractions included; on a deterministic run, since its clock
// started) and performance.timeOrigin (the Unix time of that origin, ms).
func (r *runner) installPerformance() error {
	vm := r.vm
	p := vm.NewObject()
	origin := float64(r.started.UnixMicro()) / 1000
	now := func() float64 { return float64(time.Since(r.started).Microseconds()) / 1000 }
	if r.deterministic {
		origin = deterministic.EpochMs
		now = func() float64 { return float64(r.virtual.Microseconds()) / 1000 }
	}
	if err := p.Set("now", now); err != nil {
		return fmt.Errorf("install performance.now: %w", err)
	}
	if err := p.Set("timeOrigin", origin); err != nil {
		return fmt.Errorf("install performance.timeOrigin: %w", err)
	}
	if err := vm.Set("performance", p); err != nil {
		return fmt.Errorf("install performance: %w", err)
	}
	return nil
}
