package goja

import (
	"strings"
	"testing"

	"github.com/execfarm/execfarm/runtime/transform"
)

// TestTypeScriptEndToEnd runs transform output: the path the supervisor and
// worker take together.
func TestTypeScriptEndToEnd(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		stdout   string
		errSub   []string
		exitCode int
	}{
		{
			name:   "acceptance",
			code:   `const n: number = 6 * 7; console.log("answer", n)`,
			stdout: "answer 42\n",
		},
		{
			name: "language features",
			code: `interface Pt { x: number; y?: { z: number } }
enum Kind { A = "a", B = "b" }
class Counter {
  #n = 0;
  static made = 0;
  constructor(private readonly step: number) { Counter.made++ }
  inc(): number { return this.#n += this.step }
}
const c = new Counter(2); c.inc();
const p: Pt = { x: 1 };
const { x, ...rest } = { x: 1, a: 2, b: 3 };
const arr = [...[1, 2], ...[3]];
async function* gen() { yield 1; yield 2 }
const got: number[] = [];
for await (const v of gen()) got.push(v);
const slow = (ms: number) => new Promise<number>(r => setTimeout(() => r(ms), ms));
const all = await Promise.all([slow(5), slow(1)]);
console.log(c.inc(), Counter.made, p.y?.z ?? "none", x, rest, arr, got, all, ` + "`${Kind.B}-${arr.length}`" + `)`,
			stdout: "4 1 none 1 { a: 2, b: 3 } [ 1, 2, 3 ] [ 1, 2 ] [ 5, 1 ] b-3\n",
		},
		{
			name: "runtime error names the user's lines",
			code: `type N = number;
const a: N = 1;

function fail(msg: string): never {
  throw new Error(msg);
}
await new Promise<void>((r) => setTimeout(r, 1));
fail("at line five");`,
			errSub:   []string{"Uncaught Error: at line five\n", "    at fail (main.ts:5:", "    at main.ts:8:"},
			exitCode: ExitUncaught,
		},
		{
			name:     "error on the first line keeps its column",
			code:     `const o: any = null; console.log(o.x)`,
			errSub:   []string{"Uncaught TypeError: Cannot read property 'x'", "main.ts:1:"},
			exitCode: ExitUncaught,
		},
		{
			// A program is one script: exports are dropped, not a syntax
			// error on a line of main.js.
			name:   "exports dropped",
			code:   "export function f(): number { return 1 }\nexport const x: number = 2;\nexport default f;\nconsole.log(f() + x);",
			stdout: "3\n",
		},
		{
			// An import is a require, refused like one, on the user's line.
			name:     "import is a require",
			code:     "const a = 1;\nimport * as k8s from \"@kubernetes/client-node\";\nconsole.log(typeof k8s);",
			errSub:   []string{"Module '@kubernetes/client-node' not available in sandbox", "main.ts:2:"},
			exitCode: ExitUncaught,
		},
		{
			name:     "dynamic import is a require too",
			code:     "const a = 1;\nconst m = await import(\"m\");\nconsole.log(m);",
			errSub:   []string{"Module 'm' not available in sandbox"},
			exitCode: ExitUncaught,
		},
		{
			name:   "type-only import with top-level await",
			code:   "import type { V1Pod } from \"@kubernetes/client-node\";\nconst p: V1Pod | null = await Promise.resolve(null);\nconsole.log(p);",
			stdout: "null\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, err := transform.TypeScript(tt.code)
			if err != nil {
				t.Fatalf("transform: %v", err)
			}
			got := run(t, js, Options{})
			if got.code != tt.exitCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.exitCode, got.stderr)
			}
			if got.stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", got.stdout, tt.stdout)
			}
			if tt.errSub == nil && got.stderr != "" {
				t.Errorf("stderr = %q", got.stderr)
			}
			for _, s := range tt.errSub {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, got.stderr)
				}
			}
		})
	}
}

// TestUnsettledTopLevelAwait: a top level that waits on a promise nothing
// settles is no success: exit 13 with node's warning, as node's own ES
// module loader ends it. process.exit still decides when called.
func TestUnsettledTopLevelAwait(t *testing.T) {
	got := run(t, `console.log("before"); await new Promise(() => {}); console.log("never")`, Options{})
	if got.code != ExitUnsettled || got.stdout != "before\n" || !strings.Contains(got.stderr, "Warning: Detected unsettled top-level await") {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and the warning", got.code, got.stdout, got.stderr, ExitUnsettled)
	}
	got = run(t, `setTimeout(() => process.exit(0), 1); await new Promise(() => {})`, Options{})
	if got.code != 0 || got.stderr != "" {
		t.Errorf("process.exit(0) beside a pending top level: exit %d, stderr %q; want 0", got.code, got.stderr)
	}
	got = run(t, `await new Promise((r) => setTimeout(r, 1)); console.log("done")`, Options{})
	if got.code != ExitOK || got.stdout != "done\n" {
		t.Errorf("settled top level: exit %d, stdout %q", got.code, got.stdout)
	}
}
