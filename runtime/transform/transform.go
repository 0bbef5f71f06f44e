package transform

import (
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
	lru "github.com/hashicorp/golang-lru/v2"
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

// cacheEntries, cacheMaxCode and cacheMaxOutput bound the cache of
// transform results: at most 512 entries of code up to 32 KiB whose output
// is at most 64 KiB (lowering can blow code up 20-40 times: `using`,
// decorators, enums), so 48 MiB at worst; typical scripts are far
// smaller. esbuild's Transform costs ~0.7 ms even for one line, on the
// latency path of every request, and agents run the same script again and
// again.
const (
	cacheEntries   = 512
	cacheMaxCode   = 32 << 10
	cacheMaxOutput = 64 << 10
)

type cacheKey struct {
	loader     api.Loader
	sourceFile string
	code       string
}

// results caches successful transforms (a pure function of the key).
var results = func() *lru.Cache[cacheKey, string] {
	c, err := lru.New[cacheKey, string](cacheEntries)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return c
}()

func transform(code string, loader api.Loader, sourceFile string) (string, error) {
	if code == "" {
		return "", ErrEmptyCode
	}
	key := cacheKey{loader, sourceFile, code}
	if js, ok := results.Get(key); ok {
		return js, nil
	}
	js, err := esbuild(code, loader, sourceFile)
	if err == nil && len(code) <= cacheMaxCode && len(js) <= cacheMaxOutput {
		results.Add(key, js)
	}
	return js, err
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
