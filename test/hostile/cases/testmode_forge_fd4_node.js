// description: test mode (node): code under test that reaches net.Socket
//   through process.stdout.constructor, writes result lines of its own on
//   the results channel (fd 4) and exits with process.reallyExit(0) does
//   not pass: every line the harness writes carries a nonce the code never
//   sees, and the channel is refused as forged.
// runtime: node
// mode: test
// expect-state: COMPLETED
// expect-test-success: false
// expect-test-summary: total=0 passed=0 failed=0 skipped=0
// expect-test-error-contains: written by the code under test
const Socket = process.stdout.constructor;
const s = new Socket({ fd: 4, readable: false, writable: true });
for (const n of ["a", "b", "c"]) s.write(JSON.stringify({ name: n, passed: true, duration_ms: 1 }) + "\n");
s.write(JSON.stringify({ summary: { total: 3, passed: 3, failed: 0, skipped: 0 } }) + "\n", () => process.reallyExit(0));
// --- tests ---
test("a", () => { assert.is(1, 2); });
test("b", () => { assert.is(1, 2); });
test("c", () => { assert.is(1, 2); });
