// description: test mode: code under test that replaces assert's methods,
//   the test and assert globals, or declares test and assert of its own
//   cannot make failing tests pass: the tests get the harness' test and
//   assert as bindings of their own, and assert is frozen.
// runtime: node
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-summary: total=3 passed=0 failed=3 skipped=0
const realTest = test;
const pass = () => {};
for (const f of [
  () => { assert.is = pass; },
  () => { assert.equal = pass; },
  () => { assert.ok = pass; },
  () => { Object.defineProperty(assert, 'is', { value: pass }); },
  () => { globalThis.assert = { is: pass, equal: pass, ok: pass }; },
  () => { globalThis.test = (name) => realTest(name, pass); },
]) {
  try { f(); } catch {}
}
export function add(a, b) { return a - b; }
// --- tests ---
test("add adds", () => { assert.is(add(1, 2), 3); });
test("add is deep-equal", () => { assert.equal([add(1, 2)], [3]); });
test("ok", () => { assert.ok(add(1, 1) === 2); });
