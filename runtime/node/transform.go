package node

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/execfarm/execfarm/runtime/testresult"
	"github.com/execfarm/execfarm/runtime/transform"
)

// Names used by Transform: the user's module (as it appears in the source
// map, and so in stack traces) and the esbuild namespaces of the entry stub,
// the user's module and the modules it imports.
const (
	sourceFile  = "main.ts"
	nsMain      = "execfarm-main"
	nsModule    = "execfarm-module"
	entryImport = "execfarm:main"
)

// Prefix is the first line of every program Transform returns. It runs in
// the body of the CommonJS wrapper that the prelude compiles the program
// with, where `exports` is the object the prelude passed in: it replaces
// require, module, exports, __filename and __dirname with the sandbox's
// and opens the async function that gives the program top-level await.
// It is strict, so V8 hides this frame and all older ones from
// Error.prepareStackTrace call sites (getFunction, getThis).
const Prefix = `"use strict"; var require = exports.require, module = exports.module, exports = module.exports, __filename = "/workspace/main.ts", __dirname = "/workspace"; return (async function () {`

// suffix closes the async function and calls it with `this` set to the
// sandbox module's exports, as for a CommonJS module.
const suffix = "\n}).call(exports);\n"

// Transform turns the user's TypeScript (or JavaScript) into the program
// the node prelude runs: one CommonJS function body, line 1 Prefix, that
// returns a promise settling when the program's top-level code has run.
//
// Every import statement, require("literal") and import("literal") in the
// code becomes a call of the sandbox require at run time, so the allow-list
// applies to all of them; top-level await is kept (esbuild cannot emit it in
// CommonJS, so the program is bundled as an ES module with every import
// resolved to a stub and then wrapped in an async function); export
// statements are dropped. The output ends with an inline source map naming
// main.ts, which node applies to stack traces with --enable-source-maps.
//
// It returns transform.ErrEmptyCode for empty code (whitespace alone is a
// program that does nothing) and
// a *transform.SyntaxError (wrapping transform.ErrSyntax) for code esbuild
// cannot parse; its Line and Column are those of the user's code.
func Transform(code string) (string, error) {
	if code == "" {
		return "", transform.ErrEmptyCode
	}
	res := api.Build(api.BuildOptions{
		EntryPoints:    []string{entryImport},
		Bundle:         true,
		Write:          false,
		Outfile:        "main.js",
		Format:         api.FormatESModule,
		Platform:       api.PlatformNode,
		Engines:        []api.Engine{{Name: api.EngineNode, Version: "20"}},
		Supported:      map[string]bool{"dynamic-import": false},
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
		Plugins:        []api.Plugin{sandboxPlugin(code)},
		// Every declaration of the code stays: in test mode the tests
		// reach them by name (testresult.Assemble).
		TreeShaking: api.TreeShakingFalse,
	})
	if len(res.Errors) > 0 {
		return "", syntaxError(res.Errors)
	}
	var js, sm []byte
	for _, f := range res.OutputFiles {
		switch {
		case strings.HasSuffix(f.Path, ".map"):
			sm = f.Contents
		case strings.HasSuffix(f.Path, ".js"):
			js = f.Contents
		}
	}
	if js == nil {
		return "", ErrNoOutput
	}
	return wrap(dropExports(string(js)), sm), nil
}

// exportsRe is the export statement esbuild ends an ES module bundle with
// when its entry point exports something: `export {\n  a,\n  b as c\n};`,
// or, for an entry esbuild wraps as CommonJS (direct eval, module.exports),
// `export default require_main();`.
var exportsRe = regexp.MustCompile(`\nexport (\{[^{}]*\}|default (require_[A-Za-z0-9_$]*\(\)));\n(//# sourceMappingURL=[^\n]*\n?)?$`)

// dropExports cuts that statement (keeping the call of a CommonJS entry)
// and keeps the source-map comment after it: a program is one function
// body, which cannot export.
func dropExports(js string) string {
	m := exportsRe.FindStringSubmatchIndex(js)
	if m == nil {
		return js
	}
	call, tail := "", ""
	if m[4] >= 0 {
		call = js[m[4]:m[5]] + ";\n"
	}
	if m[6] >= 0 {
		tail = js[m[6]:m[7]]
	}
	return js[:m[0]] + "\n" + call + tail
}

// sandboxPlugin resolves the entry stub to the user's code and every other
// import or require of a literal to a stub module that calls the sandbox
// require with that name. The stub's own require stays external: esbuild
// prints it as a call of the require in scope, which Prefix replaced.
func sandboxPlugin(code string) api.Plugin {
	return api.Plugin{
		Name: "execfarm-sandbox",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				switch {
				case args.Kind == api.ResolveEntryPoint:
					// The user's module is the entry point, so that every
					// declaration stays (tree shaking off keeps the entry's
					// only); its export statement is cut (dropExports).
					return api.OnResolveResult{Path: sourceFile, Namespace: nsMain}, nil
				case args.Namespace == nsModule:
					return api.OnResolveResult{Path: args.Path, External: true}, nil
				default:
					return api.OnResolveResult{Path: args.Path, Namespace: nsModule}, nil
				}
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: nsMain}, func(api.OnLoadArgs) (api.OnLoadResult, error) {
				return api.OnLoadResult{Contents: &code, Loader: api.LoaderTS}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: nsModule}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				name, err := json.Marshal(args.Path)
				if err != nil {
					return api.OnLoadResult{}, err
				}
				s := "module.exports = require(" + string(name) + ");"
				return api.OnLoadResult{Contents: &s, Loader: api.LoaderJS}, nil
			})
		},
	}
}

// wrap puts the bundle after Prefix and before suffix, replaces esbuild's
// source-map comment with an inline one, and moves the map's mappings one
// line down for Prefix (a leading ';' in "mappings" is an empty generated
// line, Source Map Revision 3).
func wrap(js string, sm []byte) string {
	if i := strings.LastIndex(js, "//# sourceMappingURL="); i >= 0 {
		js = js[:i]
	}
	var b strings.Builder
	b.Grow(len(Prefix) + len(js) + len(sm)*4/3 + 128)
	b.WriteString(Prefix)
	b.WriteString("\n")
	b.WriteString(js)
	b.WriteString(suffix)
	if m := shiftMap(sm); m != "" {
		b.WriteString("//# sourceMappingURL=data:application/json;base64,")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(m)))
		b.WriteString("\n")
	}
	return b.String()
}

// shiftMap returns the source map sm with one empty generated line in
// front and its sources renamed to main.ts; "" when sm is not a map.
func shiftMap(sm []byte) string {
	var m map[string]any
	if len(sm) == 0 || json.Unmarshal(sm, &m) != nil {
		return ""
	}
	mappings, ok := m["mappings"].(string)
	if !ok {
		return ""
	}
	m["mappings"] = ";" + mappings
	if srcs, ok := m["sources"].([]any); ok {
		for i, s := range srcs {
			if str, ok := s.(string); ok && strings.HasSuffix(str, ":"+sourceFile) {
				srcs[i] = sourceFile
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(out)
}

// syntaxError converts esbuild's first error into a *transform.SyntaxError
// with a 1-based column counted in code points, as package transform does.
func syntaxError(msgs []api.Message) *transform.SyntaxError {
	first := msgs[0]
	e := &transform.SyntaxError{Message: first.Text, More: len(msgs) - 1}
	if loc := first.Location; loc != nil {
		e.Line = loc.Line
		e.LineText = loc.LineText
		col := min(max(loc.Column, 0), len(loc.LineText))
		e.Column = utf8.RuneCountInString(loc.LineText[:col]) + 1
	}
	return e
}

// AssembleTests joins Transform's outputs for the code under test and the
// tests into the program of test mode (testresult.Assemble inside one
// Prefix and suffix; code may be ""), with the code's source map. It
// returns ErrNoOutput when a part is not Transform's output.
func AssembleTests(code, tests string, names []string) (string, error) {
	body := func(js string) (string, string, bool) {
		if js == "" {
			return "", "", true
		}
		if !strings.HasPrefix(js, Prefix+"\n") {
			return "", "", false
		}
		js = js[len(Prefix)+1:]
		sm := ""
		if i := strings.LastIndex(js, "//# sourceMappingURL="); i >= 0 {
			js, sm = js[:i], js[i:]
		}
		if !strings.HasSuffix(js, suffix) {
			return "", "", false
		}
		return js[:len(js)-len(suffix)], sm, true
	}
	c, sm, ok1 := body(code)
	t, _, ok2 := body(tests)
	if !ok1 || !ok2 {
		return "", ErrNoOutput
	}
	return Prefix + "\n" + testresult.Assemble(c, t, names) + suffix + sm, nil
}
