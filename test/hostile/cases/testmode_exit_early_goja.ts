// description: test mode: code under test that exits before the tests
//   run leaves the run failed, never passed.
// runtime: goja
// mode: test
// expect-state: FAILED
// expect-test-success: false
// expect-test-error-contains: process.exit(0)
process.exit(0);
// --- tests ---
test("never runs", () => { assert.is(1, 2); });
