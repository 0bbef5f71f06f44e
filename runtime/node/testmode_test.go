package node

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/execfarm/execfarm/runtime/testresult"
)

// runNodeTests runs code and tests in test mode as program.Build has the
// worker run them: the payload (nonce, assembled program) on fd 3, the
// results channel on fd 4, read as the supervisor reads it.
func runNodeTests(t *testing.T, code, tests string) (testresult.Summary, []testresult.Result, result) {
	t.Helper()
	nodePath, bundle := requireBundle(t)
	codeJS := ""
	if code != "" {
		var err error
		if codeJS, err = Transform(code); err != nil {
			t.Fatalf("Transform code: %v", err)
		}
	}
	testsJS, err := Transform(tests)
	if err != nil {
		t.Fatalf("Transform tests: %v", err)
	}
	prog, err := AssembleTests(codeJS, testsJS, testresult.ModuleNames(tests))
	if err != nil {
		t.Fatal(err)
	}
	nonce := testresult.NewNonce()
	argv, err := Argv(Config{NodePath: nodePath, BundleDir: bundle, Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	progFile, err := os.CreateTemp(dir, "prog")
	if err != nil {
		t.Fatal(err)
	}
	defer progFile.Close()
	if _, err := progFile.Write(testresult.EncodePayload(nonce, prog)); err != nil {
		t.Fatal(err)
	}
	if _, err := progFile.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	// A pipe, as in the sandbox (the code can open a net.Socket on it).
	resR, resW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer resR.Close()
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(resR)
		read <- b
	}()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{progFile, resW}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	resW.Close()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run node: %v", err)
	}
	raw := <-read
	sum, results, err := testresult.Parse(bytes.NewReader(testresult.Authenticate(raw, nonce)))
	if err != nil {
		t.Fatal(err)
	}
	return sum, results, result{stdout: stdout.String(), stderr: stderr.String(), exit: cmd.ProcessState.ExitCode()}
}

// TestTestModeCannotBeForged: what the code under test does before the
// tests cannot make a failing test pass, nor the run.
func TestTestModeCannotBeForged(t *testing.T) {
	const failing = `test("one", () => { assert.is(add(1, 2), 3); });
test("two", () => { assert.equal({ a: add(1, 1) }, { a: 2 }); });
test("three", () => { assert.match(String(add(1, 1)), "2"); });`
	for _, tc := range []struct{ name, code string }{
		{"assert replaced", `try { assert.is = () => {}; } catch {}
try { assert.equal = () => {}; } catch {}
try { Object.defineProperty(assert, "match", { value: () => {} }); } catch {}`},
		{"globals replaced", `const real = globalThis.test;
try { globalThis.test = (n) => real(n, () => {}); } catch {}
try { globalThis.assert = { is() {}, equal() {}, match() {} }; } catch {}`},
		{"globals shadowed", `const real = globalThis.test;
function test(n, fn) { real(n, () => {}); }
const assert = { is() {}, equal() {}, match() {} };`},
		{"intrinsics patched", `for (const f of [
  () => Object.defineProperty(Object.prototype, "constructor", { get() { return RegExp; }, configurable: true }),
  () => { String.prototype.includes = () => true; },
  () => { Object.is = () => true; },
  () => { Promise.prototype.then = function (ok) { return ok(); }; },
]) { try { f(); } catch {} }`},
		{"tests registered by the code", `for (const f of [() => test("extra", () => {}), () => test.only("extra", () => {})]) { try { f(); } catch {} }`},
		{"fd 4 written and an exit without the exit event", `const s = new (process.stdout.constructor)({ fd: 4, readable: false, writable: true });
s.write(JSON.stringify({ name: "one", passed: true }) + "\n" + JSON.stringify({ summary: { total: 1, passed: 1, failed: 0, skipped: 0 } }) + "\n", () => process.reallyExit(0));`},
		{"exit before the tests", `process.exit(0);`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, results, r := runNodeTests(t, tc.code+"\nexport function add(a, b) { return a - b; }\n", failing)
			if sum.OK() || sum.Passed > 0 || r.exit == 0 && sum.Complete {
				t.Errorf("summary %+v, results %+v, exit %d; stderr %q", sum, results, r.exit, r.stderr)
			}
			// Before the tests' top level ran, none was declared.
			if sum.Complete && sum.Total != 3 && !(sum.Total == 0 && sum.Error != "") {
				t.Errorf("total %d, want the 3 tests the tests declare", sum.Total)
			}
		})
	}
}

// TestTestModeExitDuringTheTests: code that ends the process while the
// tests run leaves every declared test that did not finish "not run".
func TestTestModeExitDuringTheTests(t *testing.T) {
	sum, results, r := runNodeTests(t, `export const later = () => new Promise((ok) => setTimeout(ok, 50));
setTimeout(() => process.exit(0), 10);`, `test("a", () => {});
test("b", async () => { await later(); });
test("c", () => {});`)
	const reason = "process exited (code 0) before the tests finished"
	want := []testresult.Result{{Name: "a", Passed: true}, {Name: "b", Error: reason}, {Name: "c", Error: "not run: " + reason}}
	if sum.OK() || sum.Total != 3 || sum.Passed != 1 || sum.Failed != 2 || sum.Error != reason || len(results) != 3 || r.exit == 0 {
		t.Fatalf("summary %+v, results %+v, exit %d; stderr %q", sum, results, r.exit, r.stderr)
	}
	for i := range want {
		results[i].DurationMs = 0
		if results[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, results[i], want[i])
		}
	}
}

// TestTestModeModuleShape: the tests import the code from any relative
// path, and see its declarations; test and assert come from uvu too.
func TestTestModeModuleShape(t *testing.T) {
	sum, results, r := runNodeTests(t, `export function add(a: number, b: number) { return a + b; }
function sub(a: number, b: number) { return a - b; }
class Box { constructor(public v: number) {} }`, `import { test } from "uvu";
import * as assert from "uvu/assert";
import { add } from "./add";
import { sub as minus, Box } from "../lib/math.js";
import * as m from "./m";
test("imports", () => { assert.is(add(1, 2), 3); assert.is(minus(3, 1), 2); assert.is(new Box(4).v, 4); });
test("namespace", () => { assert.is(m.add(2, 2), 4); });
test("declarations", () => { assert.is(sub(2, 1), 1); });
test.run();`)
	if !sum.OK() || sum.Total != 3 || sum.Passed != 3 {
		t.Errorf("summary %+v, results %+v, exit %d; stderr %q", sum, results, r.exit, r.stderr)
	}
}

// TestTestModeLongNamesAndErrors: a name or an error far over the caps
// keeps its line under the reader's bound, so the summary still counts.
func TestTestModeLongNamesAndErrors(t *testing.T) {
	sum, results, r := runNodeTests(t, "", `test("n".repeat(200000), () => {});
test("e", () => { throw new Error("x".repeat(200000)); });`)
	if !sum.Complete || sum.Total != 2 || sum.Passed != 1 || sum.Failed != 1 || len(results) != 2 {
		t.Fatalf("summary %+v, exit %d; stderr %q", sum, r.exit, r.stderr)
	}
	if n := len(results[0].Name); n > testresult.MaxNameBytes || n < 1000 {
		t.Errorf("name of %d bytes", n)
	}
	if n := len(results[1].Error); n > testresult.MaxErrorBytes || n < 8000 {
		t.Errorf("error of %d bytes", n)
	}
}
