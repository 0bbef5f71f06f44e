// One program for both JavaScript runtimes; want.json is the console
// channel it must produce in each (runtime/goja and runtime/node tests).
console.log("a", 1, { b: 2 });
console.info("i");
console.warn("w");
console.error("e");
console.debug("d");
process.stdout.write("raw out\n");
process.stderr.write("raw err");
console.log("multi\nline");
await new Promise((r) => setTimeout(r, 1));
console.log("after a timer");
throw new Error("boom");
