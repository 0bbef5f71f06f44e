package transform

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// Source file names used in the source map, and so in runtime stack traces.
const (
	tsSourceFile = "main.ts"
	jsSourceFile = "main.js"
)

// gojaUnsupported lists language features esbuild must lower because goja
// cannot run them, on top of the ES2022 target. Top-level await is kept: the
// goja runner wraps the program in an async function.
//
// Probed against github.com/dop251/goja: async generators and for await are
// rejected by its parser ("Async generators are not supported yet"); the
// regexp d flag is rejected at run time. Everything else up to ES2022
// (class fields and private members, static blocks, optional chaining, ??,
// logical assignment, BigInt, named groups) runs natively.
var gojaUnsupported = map[string]bool{
	"top-level-await":      true,
	"async-generator":      false,
	"for-await":            false,
	"regexp-match-indices": false,
	"decorators":           false,
	"using":                false,
	// goja has no module loader: import() becomes a require in a
	// Promise (as the IIFE output of a program with imports has), and
	// import.meta an empty object, instead of a syntax error at run time.
	"dynamic-import": false,
	"import-meta":    false,
}

// TypeScript transforms TypeScript into goja-runnable JavaScript.
//
// The output is not minified, keeps top-level await and ends with an inline
// source map (a `//# sourceMappingURL=data:...` line) naming main.ts.
// It returns ErrEmptyCode for empty code (code of only whitespace is
// code: it runs and does nothing) and a
// *SyntaxError (wrapping ErrSyntax) for code esbuild cannot parse.
func TypeScript(code string) (string, error) {
	return transform(code, api.LoaderTS, tsSourceFile)
}

// JavaScript is TypeScript for plain JavaScript (esbuild's JS loader): it
// lowers what goja cannot run and adds the same inline source map, naming
// main.js. Errors are as for TypeScript.
func JavaScript(code string) (string, error) {
	return transform(code, api.LoaderJS, jsSourceFile)
}

func transform(code string, loader api.Loader, sourceFile string) (string, error) {
	if code == "" {
		return "", ErrEmptyCode
	}
	return esbuild(code, loader, sourceFile)
}

// esbuild runs esbuild's Transform, as an ES module: that is the one
// output format that keeps top-level await. goja runs the output as one
// script inside an async function, where import and export statements are
// syntax errors, so a program that has any is transformed again as an IIFE
// (see module).
func esbuild(code string, loader api.Loader, sourceFile string) (string, error) {
	opts := api.TransformOptions{
		Loader:         loader,
		Format:         api.FormatESModule,
		Target:         api.ES2022,
		Supported:      gojaUnsupported,
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		Sourcefile:     sourceFile,
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
	}
	res := api.Transform(code, opts)
	if len(res.Errors) > 0 {
		return "", newSyntaxError(res.Errors)
	}
	out := string(res.Code)
	keyword := moduleStatement(out)
	if keyword == "" {
		return out, nil
	}
	return module(code, opts, keyword)
}

// module transforms a program with import or export statements (keyword
// names the first) as an IIFE: esbuild drops the exports, which nothing
// could import (a program is one script), and turns each import into a
// require call, which the goja runtime answers (MODULE_NOT_FOUND for
// every module but uvu's in test mode) like a require in the code. An
// IIFE cannot hold top-level await, so a program with both is refused
// with a *SyntaxError that says so, before a sandbox is spent.
func module(code string, opts api.TransformOptions, keyword string) (string, error) {
	opts.Format = api.FormatIIFE
	// An IIFE would drop the declarations nothing in it uses; in test mode
	// the tests reach them by name (testresult.Assemble).
	opts.TreeShaking = api.TreeShakingFalse
	res := api.Transform(code, opts)
	if len(res.Errors) == 0 {
		return string(res.Code), nil
	}
	e := newSyntaxError(res.Errors)
	if strings.HasPrefix(e.Message, "Top-level await is currently not supported") {
		e.Message = fmt.Sprintf("top-level await cannot be used in a program with %s statements: goja runs a program as one script (use require() instead of import, drop export, or run it with the node runtime)", keyword)
	}
	return "", e
}

// moduleStatement returns "import" or "export" when out, esbuild's ES
// module output, has such a statement at its top level, and "" when it
// has none. esbuild prints its output with top-level statements at column
// 0, but a line of a multi-line string can also start with those words:
// such candidates are parsed again inside a function, where a module
// statement is a syntax error (on its own line, which starts with the
// keyword) and a string is not.
func moduleStatement(out string) string {
	body, _ := splitSourceMapComment(out)
	if !strings.HasPrefix(body, "import") && !strings.HasPrefix(body, "export") &&
		!strings.Contains(body, "\nimport") && !strings.Contains(body, "\nexport") {
		return ""
	}
	res := api.Transform("(async () => {\n"+body+"\n})();", api.TransformOptions{
		Loader: api.LoaderJS, Target: api.ESNext, LogLevel: api.LogLevelSilent,
	})
	for _, m := range res.Errors {
		if loc := m.Location; loc != nil {
			for _, w := range []string{"import", "export"} {
				if strings.HasPrefix(loc.LineText, w) {
					return w
				}
			}
		}
	}
	return ""
}

// splitSourceMapComment cuts the inline source-map comment esbuild ends
// its output with, whose base64 could hold any word.
func splitSourceMapComment(out string) (body, comment string) {
	if i := strings.LastIndex(out, "\n//# sourceMappingURL="); i >= 0 {
		return out[:i+1], out[i+1:]
	}
	return out, ""
}

func newSyntaxError(msgs []api.Message) *SyntaxError {
	first := msgs[0]
	e := &SyntaxError{Message: first.Text, More: len(msgs) - 1}
	if loc := first.Location; loc != nil {
		e.Line = loc.Line
		e.LineText = loc.LineText
		col := min(max(loc.Column, 0), len(loc.LineText))
		e.Column = utf8.RuneCountInString(loc.LineText[:col]) + 1
	}
	return e
}

// SplitSourceMap cuts the inline source-map comment that ends out, an
// output of TypeScript or JavaScript, from it: body and the comment's line
// ("" when there is none).
func SplitSourceMap(out string) (body, comment string) {
	return splitSourceMapComment(out)
}
