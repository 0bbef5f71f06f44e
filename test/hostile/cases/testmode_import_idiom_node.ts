// description: test mode: uvu's own idiom works: the tests import test
//   from uvu, assert from uvu/assert and the code under test from a
//   relative path ("./add": any relative path is the code), whether the
//   code exports its functions or only declares them.
// runtime: node
// mode: test
// expect-state: COMPLETED
// expect-test-success: true
// expect-test-summary: total=3 passed=3 failed=0 skipped=0
export function add(a: number, b: number): number { return a + b; }
function sub(a: number, b: number): number { return a - b; }
// --- tests ---
import { test } from "uvu";
import * as assert from "uvu/assert";
import { add } from "./add";
import { sub as minus } from "../src/math";
test("add", () => { assert.is(add(1, 2), 3); });
test("sub", () => { assert.is(minus(3, 2), 1); });
test("declarations are visible too", () => { assert.is(sub(1, 1), 0); });
test.run();
