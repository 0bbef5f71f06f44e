// description: test mode: code under test whose top level declares test
//   and assert (shadowing the globals in the one file the supervisor used
//   to run) does not replace the tests': failing tests fail.
// runtime: node
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-summary: total=2 passed=0 failed=2 skipped=0
const realTest = globalThis.test;
function test(name, fn) { realTest(name, () => {}); }
const assert = { is() {}, equal() {} };
function add(a, b) { return a - b; }
// --- tests ---
test("add adds", () => { assert.is(add(1, 2), 3); });
test("add is deep-equal", () => { assert.equal([add(1, 2)], [3]); });
