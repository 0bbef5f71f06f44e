// description: test mode: the run's tests are those the tests file
//   declares: code under test that registers passing tests of its own (at
//   its top level, or later from a timer) is refused, and they are not
//   counted.
// runtime: node
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-summary: total=1 passed=0 failed=1 skipped=0
// expect-stdout-contains: refused: test() is for the tests
for (const f of [() => test("extra 1", () => {}), () => test.only("extra 2", () => {}), () => require("uvu").test("extra 3", () => {})]) {
  try { f(); } catch (e) { console.log("refused: " + e.message); }
}
setTimeout(() => { try { test("extra 4", () => {}); } catch {} }, 0);
export const add = (a, b) => a - b;
// --- tests ---
test("add adds", () => { assert.is(add(1, 2), 3); });
