package goja

import (
	"fmt"

	gojavm "github.com/dop251/goja"
)

// installProcess defines a minimal process global (exit, exitCode, env,
// argv, platform, nextTick) and a require that refuses every module; the
// allow-listed require is not implemented yet.
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
