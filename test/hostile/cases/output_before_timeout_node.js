// description: what a node program wrote before its timeout is kept, a
//   partial line included, even when it then never returns to its event
//   loop (its main thread blocks in Atomics.wait until killed).
// runtime: node
// limits: timeout_ms=3000
// expect-state: TIMEOUT
// expect-reason: TIMEOUT
// expect-stdout-matches: (?m)^logged before the timeout$
// expect-stdout-contains: and a partial line
// expect-stderr-contains: written to stderr before the timeout
console.log("logged before the timeout");
process.stdout.write("and a partial line");
console.error("written to stderr before the timeout");
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
