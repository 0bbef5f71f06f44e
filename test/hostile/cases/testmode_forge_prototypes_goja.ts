// description: test mode: code under test that patches the built-ins
//   uvu's assert computes with (Object.prototype.constructor, Object.keys,
//   String.prototype.includes, RegExp.prototype.test, the global Date)
//   cannot make failing assertions pass: the intrinsics are frozen before
//   the code runs.
// runtime: goja
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-summary: total=4 passed=0 failed=4 skipped=0
for (const f of [
  () => { Object.defineProperty(Object.prototype, 'constructor', { get() { return RegExp; }, configurable: true }); },
  () => { Object.keys = () => []; },
  () => { String.prototype.includes = () => true; },
  () => { RegExp.prototype.test = () => true; },
  () => { (globalThis as any).Date = function () {}; },
]) {
  try { f(); } catch {}
}
export const user = () => ({ name: "mallory" });
// --- tests ---
test("deep equal objects", () => { assert.equal(user(), { name: "alice" }); });
test("deep equal to more keys", () => { assert.equal({}, { a: 1 }); });
test("match a string", () => { assert.match(user().name, "alice"); });
test("match a regexp", () => { assert.match(user().name, /alice/); });
