// description: test mode: code under test whose top level declares the
//   name of a built-in the tests use (a Number and a JSON of its own, seen
//   by the tests, which share the code's scope) cannot make failing tests
//   pass: the run fails naming the shadowed built-in (both tests passed
//   before).
// runtime: node
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-error-contains: declares Number, the name of a built-in the tests use
export function half(n) { return n / 2; }
export function toJSON(o) { return "{}"; }
const Number = { isInteger: () => true };
const JSON = { stringify: () => "{}" };
// --- tests ---
import { half, toJSON } from "./code";
test("half returns an integer", () => { assert.ok(Number.isInteger(half(3))); });
test("toJSON is JSON.stringify", () => { assert.is(toJSON({ a: 1 }), JSON.stringify({ a: 1 })); });
