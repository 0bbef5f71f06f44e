package goja

import (
	"embed"
	"fmt"
	"strings"

	gojavm "github.com/dop251/goja"

	"github.com/execfarm/execfarm/runtime/testresult"
)

// uvuSources is uvu's assertion library and its dependencies, vendored
// unmodified from npm (versions and licences in uvujs/LICENSES.txt), so that
// assert in goja has uvu's semantics and messages by construction.
//
//go:embed uvujs/uvu_assert.js uvujs/uvu_diff.js uvujs/dequal.js uvujs/kleur.js uvujs/diff.min.js
var uvuSources embed.FS

// uvuModules maps the names the vendored files require to their files.
var uvuModules = map[string]string{
	"uvu/assert": "uvujs/uvu_assert.js",
	"uvu/diff":   "uvujs/uvu_diff.js",
	"dequal":     "uvujs/dequal.js",
	"kleur":      "uvujs/kleur.js",
	"diff":       "uvujs/diff.min.js",
}

// uvuPatches are textual replacements applied to a vendored file when it is
// loaded, each expected exactly once: old, new. The one patch keeps
// behaviour and saves ~20-70 ms per run: goja compiles regexp literals
// when the script is compiled, and regexp2 takes that long to optimise
// (?=\S), while the equal (?=[^\s]) is instant.
var uvuPatches = map[string][2]string{
	"uvu/assert": {`/^[ \t]*(?=\S)/gm`, `/^[ \t]*(?=[^\s])/gm`},
}

// moduleLoader is a minimal CommonJS loader for the vendored files only. It
// gives them a private process object (no colours for kleur: not a TTY, no
// FORCE_COLOR), so the program cannot change how they behave through the
// process global.
type moduleLoader struct {
	vm      *gojavm.Runtime
	cache   map[string]gojavm.Value
	process *gojavm.Object
	require gojavm.Value
	guard   *gojavm.Object // diffGuard, compiled on first use
}

func newModuleLoader(vm *gojavm.Runtime) *moduleLoader {
	l := &moduleLoader{vm: vm, cache: map[string]gojavm.Value{}}
	l.process = vm.NewObject()
	stdout := vm.NewObject()
	_ = stdout.Set("isTTY", false)
	_ = l.process.Set("env", vm.NewObject())
	_ = l.process.Set("stdout", stdout)
	l.require = vm.ToValue(func(call gojavm.FunctionCall) gojavm.Value {
		name := call.Argument(0).String()
		if name == "uvu/diff" {
			// uvu/assert needs compare and lines only to describe a failure:
			// the diff library is compiled on the first failure that asks.
			return l.lazyDiff()
		}
		v, err := l.load(name)
		if err != nil {
			panic(err)
		}
		if name == "diff" {
			// Only uvu/diff requires jsdiff; bound its cost.
			return l.callTool("wrapDiff", v)
		}
		return v
	})
	return l
}

// load evaluates the module name once and returns its exports.
func (l *moduleLoader) load(name string) (gojavm.Value, error) {
	if v, ok := l.cache[name]; ok {
		return v, nil
	}
	path, ok := uvuModules[name]
	if !ok {
		return nil, fmt.Errorf("load %s: %w", name, errNoModule)
	}
	src, err := uvuSources.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	code := string(src)
	if p, ok := uvuPatches[name]; ok {
		if strings.Count(code, p[0]) != 1 {
			return nil, fmt.Errorf("patch %s: %q not found once: %w", name, p[0], errNoModule)
		}
		code = strings.Replace(code, p[0], p[1], 1)
	}
	fnv, err := l.vm.RunScript(name+".js", "(function (exports, require, module, process) {"+code+"\n})")
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	fn, ok := gojavm.AssertFunction(fnv)
	if !ok {
		return nil, fmt.Errorf("compile %s: %w", name, errNoModule)
	}
	module := l.vm.NewObject()
	exports := l.vm.NewObject()
	_ = module.Set("exports", exports)
	if _, err := fn(exports, exports, l.require, module, l.process); err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", name, err)
	}
	v := module.Get("exports")
	l.cache[name] = v
	return v, nil
}

// maxDiffEdits bounds the edit distance (in characters, lines or array
// elements) up to which uvu's diff is computed; beyond it a failure is
// reported without details. jsdiff's cost grows with its square: 128 edits
// take about 0.06 s in goja, 200 about 0.15 s, 900 about 9 s.
const maxDiffEdits = 128

// diffGuard limits what uvu/assert's eager diff may cost; uvu/assert calls
// uvu/diff's compare or lines on every failure. wrapDiff passes
// maxEditLength to jsdiff, and makes an aborted diff throw. guard wraps
// compare and lines: when a lower bound of the details' length (in UTF-16
// units, at most their UTF-8 bytes) exceeds the cap, details would be
// dropped anyway (testresult.DetailsMaxBytes) and none are computed; when
// the diff was aborted there are no details either. The bounds follow uvu
// 0.5.6's diff/index.js: arrays prints every element of both arrays, common
// ones once, each on a line of at least 7 bytes plus its JSON; lines prints
// every line of both inputs, common ones once; chars and direct print both
// values whole on two lines.
const diffGuard = `(function (max, maxEdits) {
	'use strict';
	const aborted = {};
	const len = (x) => String(x).length;
	const json = (d, x) => { const s = d.stringify(x); return typeof s == 'string' ? s.length : 1; };
	const hasNL = (x) => typeof x == 'string' && /\r?\n/.test(x);
	const lineSide = (x) => len(x) + 2 * String(x).split('\n').length - 2;
	const lineBound = (a, b) => Math.max(lineSide(a), lineSide(b));
	function lowerBound(d, input, expect) {
		if (Array.isArray(expect) && Array.isArray(input)) {
			const side = (arr) => { let n = 0; for (let i = 0; i < arr.length; i++) n += 7 + json(d, arr[i]); return n; };
			return Math.max(side(input), side(expect));
		}
		if (expect instanceof RegExp) return 2 * Math.max(len(input), len(expect)) + 30;
		const isA = input && typeof input == 'object';
		const isB = expect && typeof expect == 'object';
		if (isA && isB) input = d.sort(input, expect);
		if (isB) expect = d.stringify(expect);
		if (isA) input = d.stringify(input);
		if (hasNL(input) || hasNL(expect)) return lineBound(input, expect);
		return 2 * Math.max(len(input), len(expect)) + 30;
	}
	const safe = (f) => (...args) => { try { return f(...args); } catch (e) { return 0; } };
	const withLimit = (f) => (a, b, options) => {
		const out = f(a, b, Object.assign({}, options, { maxEditLength: maxEdits }));
		if (out === undefined) throw aborted;
		return out;
	};
	const orNone = (f) => (...args) => {
		try { return f(...args); } catch (e) { if (e === aborted) return false; throw e; }
	};
	return {
		wrapDiff: (d) => Object.assign({}, d, {
			diffChars: withLimit(d.diffChars),
			diffLines: withLimit(d.diffLines),
			diffArrays: withLimit(d.diffArrays),
		}),
		guard: (d) => {
			const compareBound = safe((a, b) => lowerBound(d, a, b));
			const linesBound = safe(lineBound);
			return {
				compare: orNone((input, expect) => compareBound(input, expect) > max ? false : d.compare(input, expect)),
				lines: orNone((input, expect, n) => linesBound(input, expect) > max ? false : d.lines(input, expect, n)),
			};
		},
	};
})`

// diffTools returns the compiled diffGuard.
func (l *moduleLoader) diffTools() *gojavm.Object {
	if l.guard != nil {
		return l.guard
	}
	g, err := l.vm.RunScript("uvu/diffguard.js", diffGuard)
	if err != nil {
		panic(err)
	}
	build, ok := gojavm.AssertFunction(g)
	if !ok {
		panic(l.vm.NewTypeError("diff guard is not a function"))
	}
	v, err := build(gojavm.Undefined(), l.vm.ToValue(testresult.DetailsMaxBytes), l.vm.ToValue(maxDiffEdits))
	if err != nil {
		panic(err)
	}
	l.guard = v.ToObject(l.vm)
	return l.guard
}

// callTool calls diffTools()[name](arg).
func (l *moduleLoader) callTool(name string, arg gojavm.Value) gojavm.Value {
	f, ok := gojavm.AssertFunction(l.diffTools().Get(name))
	if !ok {
		panic(l.vm.NewTypeError("diff guard has no " + name))
	}
	v, err := f(gojavm.Undefined(), arg)
	if err != nil {
		panic(err)
	}
	return v
}

// lazyDiff stands for uvu/diff, seen through diffGuard, until uvu/assert
// calls one of its functions: then the diff library is compiled.
func (l *moduleLoader) lazyDiff() gojavm.Value {
	var guarded *gojavm.Object
	load := func() *gojavm.Object {
		if guarded == nil {
			exports, err := l.load("uvu/diff")
			if err != nil {
				panic(err)
			}
			guarded = l.callTool("guard", exports).ToObject(l.vm)
		}
		return guarded
	}
	o := l.vm.NewObject()
	for _, fn := range []string{"compare", "lines"} {
		_ = o.Set(fn, func(call gojavm.FunctionCall) gojavm.Value {
			f, ok := gojavm.AssertFunction(load().Get(fn))
			if !ok {
				panic(l.vm.NewTypeError("uvu/diff has no function " + fn))
			}
			v, err := f(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		})
	}
	return o
}
