// description: a JavaScript heap bomb in goja is stopped by the sandbox's
//   memory limit (OOM kill), not by the supervisor running out of memory.
// runtime: goja
// limits: memory_bytes=128Mi timeout_ms=20000
// expect-state: FAILED
// expect-reason: MEMORY
// expect-stdout-not-contains: survived
const hoard: string[][] = [];
for (let i = 0; i < 1e7; i++) {
  hoard.push(new Array(1 << 16).fill("x".repeat(8) + i));
}
console.log("survived", hoard.length);
