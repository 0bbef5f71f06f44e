// description: test mode (node): code under test that ends the process
//   with process.reallyExit(0) (no exit event, no summary) before the
//   tests run leaves the run failed, never passed.
// runtime: node
// mode: test
// expect-state: COMPLETED
// expect-test-success: false
// expect-test-error-contains: the test run ended before it reported a summary
process.reallyExit(0);
// --- tests ---
test("never runs", () => { assert.is(1, 2); });
