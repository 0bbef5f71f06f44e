// description: a goja busy loop that never yields (and catches every
//   exception) still ends at the timeout: the sandbox is killed, not
//   interrupted politely.
// runtime: goja
// limits: timeout_ms=1500
// expect-state: TIMEOUT
// expect-reason: TIMEOUT
// expect-wall-max-ms: 5000
console.log("spinning");
for (;;) {
  try {
    for (;;) {}
  } catch (e) {
    // swallow interrupts and keep spinning
  }
}
