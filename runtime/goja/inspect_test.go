package goja

import "testing"

func TestInspect(t *testing.T) {
	tests := []struct{ name, expr, want string }{
		{"circular", `(() => { const o = { a: 1 }; o.self = o; return o })()`, "{ a: 1, self: [Circular *1] }"},
		{"depth", `({ a: { b: { c: { d: 1 } } } })`, "{ a: { b: { c: [Object] } } }"},
		{"null prototype", `Object.create(null)`, "[Object: null prototype] {}"},
		{"class instance", `new (class Pt { constructor() { this.x = 1 } })()`, "Pt { x: 1 }"},
		{"class", `class Foo {}`, "[class Foo]"},
		{"named function", `function foo() {}`, "[Function: foo]"},
		{"nested error", `({ e: new RangeError("r") })`, "{ e: [RangeError: r] }"},
		{"getter", `({ get g() { throw new Error("not called") } })`, "{ g: [Getter] }"},
		{"symbol", `({ [Symbol("k")]: Symbol("v") })`, "{ [Symbol(k)]: Symbol(v) }"},
		{"quotes", `["it's", 'say "hi"', "a\nb"]`, `[ "it's", 'say "hi"', 'a\nb' ]`},
		{"date", `new Date(0)`, "1970-01-01T00:00:00.000Z"},
		{"set", `new Set([1, "a"])`, "Set(2) { 1, 'a' }"},
		{"promise", `Promise.resolve(5)`, "Promise { 5 }"},
		{"boxed", `new String("s")`, "[String: 's']"},
		{"long object breaks lines", `({ alpha: "aaaaaaaaaaaaaaaa", beta: "bbbbbbbbbbbbbbbbbb", gamma: "cccccccccccccccccccc" })`,
			"{\n  alpha: 'aaaaaaaaaaaaaaaa',\n  beta: 'bbbbbbbbbbbbbbbbbb',\n  gamma: 'cccccccccccccccccccc'\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, "console.log(("+tt.expr+"))", Options{})
			if got.code != 0 || got.stdout != tt.want+"\n" {
				t.Errorf("got %q (exit %d, stderr %q), want %q", got.stdout, got.code, got.stderr, tt.want)
			}
		})
	}
}
