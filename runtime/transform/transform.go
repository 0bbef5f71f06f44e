package transform

import (
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

// esbuild runs esbuild's Transform.
func esbuild(code string, loader api.Loader, sourceFile string) (string, error) {
	res := api.Transform(code, api.TransformOptions{
		Loader:         loader,
		Format:         api.FormatESModule,
		Target:         api.ES2022,
		Supported:      gojaUnsupported,
		Sourcemap:      api.SourceMapInline,
		SourcesContent: api.SourcesContentExclude,
		Sourcefile:     sourceFile,
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return "", newSyntaxError(res.Errors)
	}
	return string(res.Code), nil
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
