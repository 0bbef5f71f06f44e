// The README's TypeScript lines ("Using it from code"), then what they did.
// Run: npx tsx examples/readme.ts (as root for embedded mode, or with
// SANDBOX_SOCKET_PATH and EXECFARM_TOKEN pointing at a running server).
import { connect } from "@execfarm/sdk";

await using ef = await connect();                  // a configured server, else an embedded one
const r = await ef.run("console.log(6 * 7)", { runtime: "goja", memory: "256Mi", timeoutMs: 10_000 });
console.log(r.exitCode, r.stdout, r.terminationReason);          // 0 '42\n' 'exited'
await using sbx = await ef.createSandbox({ runtime: "shell", ttlSeconds: 600, labels: { task: "demo" } });
await sbx.files.write("in/data.txt", "hello");
const out = await sbx.exec("tr a-z A-Z < in/data.txt", { onStdout: (chunk) => process.stdout.write(chunk) });
console.log();                                                   // HELLO (the chunk above), then a new line
console.log(out.exitCode, await sbx.files.read("in/data.txt", { encoding: "utf8" }));  // 0 hello
