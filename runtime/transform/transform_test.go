package transform

import (
	"errors"
	"strings"
	"testing"

	gojavm "github.com/dop251/goja"
)

// compileWrapped checks that out is accepted by goja's compiler once wrapped
// the way the goja runner wraps it (an async function, for top-level await).
func compileWrapped(t *testing.T, out string) {
	t.Helper()
	if _, err := gojavm.Compile("main.js", "(async () => {"+out+"\n})()", false); err != nil {
		t.Fatalf("goja rejects transform output: %v\n%s", err, out)
	}
}

func TestTypeScript(t *testing.T) {
	tests := []struct {
		name string
		code string
		want []string // substrings of the output
		not  []string // substrings that must be gone
	}{
		{
			name: "acceptance",
			code: `const n: number = 6 * 7; console.log("answer", n)`,
			want: []string{"const n = 6 * 7;", `console.log("answer", n);`, "//# sourceMappingURL=data:application/json;base64,"},
			not:  []string{": number"},
		},
		{
			name: "top-level await kept",
			code: "await new Promise(r => setTimeout(r, 10)); console.log(\"done\")",
			want: []string{"await new Promise("},
		},
		{
			name: "interfaces and generics stripped",
			code: "interface P { x: number }\nfunction id<T>(v: T): T { return v }\nconst p: P = { x: id<number>(1) }",
			want: []string{"function id(v)", "x: id(1)"},
			not:  []string{"interface", "<T>"},
		},
		{
			name: "enum lowered",
			code: "enum Color { Red, Green }\nconsole.log(Color.Green)",
			want: []string{`Color2[Color2["Green"] = 1] = "Green"`},
		},
		{
			name: "modern syntax goja runs is kept",
			code: "class A { #x = 1; static y = 2; get x() { return this.#x?.valueOf() ?? 0 } }\n" +
				"const { a, ...rest } = { a: 1, b: 2 };\nconst arr = [...[1, 2], 3];\nconst s = `a${a}`;\n" +
				"async function f() { await null }\nlet q = null; q ??= 1",
			want: []string{"#x = 1", "?.valueOf()", "...rest", "`a${a}`", "async function f()", "q ??= 1"},
		},
		{
			name: "async generator and for await lowered",
			code: "async function* g() { yield 1 }\nfor await (const v of g()) console.log(v)",
			not:  []string{"async function*", "for await"},
			want: []string{"__asyncGenerator", "__forAwait"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkTypeScript(t, tt.code, tt.want, tt.not) })
	}
}

// checkTypeScript transforms code and checks that the output has every
// substring of want and, outside its inline source map (whose base64
// could hold any word), none of not, and that goja compiles it.
func checkTypeScript(t *testing.T, code string, want, not []string) {
	t.Helper()
	out, err := TypeScript(code)
	if err != nil {
		t.Fatalf("TypeScript: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	body := out
	if i := strings.LastIndex(out, "//# sourceMappingURL="); i >= 0 {
		body = out[:i]
	}
	for _, n := range not {
		if strings.Contains(body, n) {
			t.Errorf("output still has %q:\n%s", n, body)
		}
	}
	compileWrapped(t, out)
}

func TestJavaScript(t *testing.T) {
	out, err := JavaScript("const o = { a: { b: 1 } };\nconsole.log(o?.a?.b, `t${1}`)")
	if err != nil {
		t.Fatalf("JavaScript: %v", err)
	}
	if !strings.Contains(out, "o?.a?.b") {
		t.Errorf("optional chaining not kept:\n%s", out)
	}
	compileWrapped(t, out)

	// Type annotations are a syntax error in plain JavaScript.
	_, err = JavaScript("const n: number = 1")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("JavaScript with a type annotation: got %v, want *SyntaxError", err)
	}
	if se.Line != 1 || se.Column != 8 {
		t.Errorf("position = %d:%d, want 1:8 (%v)", se.Line, se.Column, se)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		line     int
		column   int
		msg      string
		lineText string
		errText  string
	}{
		{
			name:     "missing semicolon",
			code:     "const a = 1 x",
			line:     1,
			column:   13,
			msg:      `Expected ";" but found "x"`,
			lineText: "const a = 1 x",
			errText:  `syntax error at 1:13: Expected ";" but found "x"`,
		},
		{
			name:     "third line",
			code:     "const a = 1;\nconst b = 2;\nconst c = (;\n",
			line:     3,
			column:   12,
			lineText: "const c = (;",
			msg:      `Unexpected ";"`,
		},
		{
			name:     "column counts code points",
			code:     "const s = \"héllo\" x",
			line:     1,
			column:   19,
			lineText: "const s = \"héllo\" x",
		},
		{
			name:    "several errors are counted",
			code:    "let x = 1;\nlet x = 2;\nlet x = 3;",
			line:    2,
			column:  5,
			errText: `syntax error at 2:5: The symbol "x" has already been declared (and 1 more error)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := TypeScript(tt.code)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want *SyntaxError", err, err)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("errors.Is(err, ErrSyntax) = false")
			}
			if se.Line != tt.line || se.Column != tt.column {
				t.Errorf("position = %d:%d, want %d:%d", se.Line, se.Column, tt.line, tt.column)
			}
			if tt.msg != "" && se.Message != tt.msg {
				t.Errorf("Message = %q, want %q", se.Message, tt.msg)
			}
			if tt.lineText != "" && se.LineText != tt.lineText {
				t.Errorf("LineText = %q, want %q", se.LineText, tt.lineText)
			}
			if tt.errText != "" && err.Error() != tt.errText {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.errText)
			}
		})
	}
}

// TestModules: goja runs a program as one script, where import and export
// statements are syntax errors; the transform drops exports and turns
// imports into require calls, and refuses them beside top-level await,
// which only an ES module can hold.
func TestModules(t *testing.T) {
	for _, tt := range []struct {
		name      string
		code      string
		want, not []string
	}{
		{name: "exports dropped", code: "export function f() { return 1 }\nexport const x = 2;\nconsole.log(f() + x)",
			want: []string{"function f()", "const x = 2;"}, not: []string{"export"}},
		{name: "import is a require", code: "import { a } from \"m\";\nconsole.log(a)",
			want: []string{`require("m")`}, not: []string{"import {"}},
		{name: "type-only import with top-level await stays a module", code: "import type { T } from \"m\";\nconst v: T = await Promise.resolve(1);\nconsole.log(v)",
			want: []string{"await Promise.resolve(1)"}, not: []string{"import", "require"}},
		{name: "dynamic import is a require, beside top-level await", code: "const m = await import(\"m\");\nconsole.log(m, import.meta.url)",
			want: []string{`require("m")`, "await Promise.resolve().then("}, not: []string{"import(", "import.meta"}},
		{name: "a string line starting with export", code: "const s = `\nexport const q = 1`;\nawait null;\nconsole.log(s)",
			want: []string{"\nexport const q = 1`", "await null"}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkTypeScript(t, tt.code, tt.want, tt.not) })
	}

	_, err := TypeScript("const a = 1;\nexport const x = await Promise.resolve(1);\nconsole.log(x)")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("export beside top-level await: got %v, want *SyntaxError", err)
	}
	if !strings.Contains(se.Message, "top-level await cannot be used in a program with export statements") || se.Line != 2 {
		t.Errorf("got %q at line %d, want the reason at line 2", se.Message, se.Line)
	}
}

// TestEmptyCode: only empty code is refused; code of only whitespace is a
// program that does nothing, as in ProDisco, and transforms.
func TestEmptyCode(t *testing.T) {
	for name, fn := range map[string]func(string) (string, error){"TypeScript": TypeScript, "JavaScript": JavaScript} {
		if _, err := fn(""); !errors.Is(err, ErrEmptyCode) {
			t.Errorf("%s(\"\") error = %v, want ErrEmptyCode", name, err)
		}
		for _, code := range []string{" ", "\n\t \r\n"} {
			if _, err := fn(code); err != nil {
				t.Errorf("%s(%q) error = %v, want none: whitespace is code", name, code, err)
			}
		}
	}
}

func FuzzTypeScript(f *testing.F) {
	f.Add(`const n: number = 6 * 7; console.log("answer", n)`)
	f.Add("await 1")
	f.Add("const a = 1 x")
	f.Fuzz(func(t *testing.T, code string) {
		out, err := TypeScript(code)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrEmptyCode) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if out != "" {
				t.Fatalf("output %q returned with error %v", out, err)
			}
			if se != nil && se.Line > 0 && se.Column < 1 {
				t.Fatalf("column %d < 1 with line %d", se.Column, se.Line)
			}
		}
	})
}
