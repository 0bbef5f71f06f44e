// description: what a goja program logged before its timeout is kept,
//   even when it then spins without ever going idle (goja's console
//   buffers, and flushes within 50 ms from a timer goroutine).
// runtime: goja
// limits: timeout_ms=1000
// expect-state: TIMEOUT
// expect-reason: TIMEOUT
// expect-stdout-matches: (?m)^logged before the timeout$
// expect-stderr-contains: written to stderr before the timeout
console.log("logged before the timeout");
console.error("written to stderr before the timeout");
for (;;) {}
