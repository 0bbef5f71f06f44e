// @execfarm/sdk against a real `execfarm serve`: the one connect() starts
// in embedded mode (EXECFARM_BIN names the binary; run as root).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import {
  connect, CancelledError, EmbeddedStartError, ExecFarm, InvalidArgumentError, NotFoundError, ResourceExhaustedError,
  UnauthenticatedError, UnavailableError, parseMemory,
} from "../src/index.js";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "..");
const tsx = join(root, "node_modules", ".bin", "tsx");

// serverEnv: the environment with no server configured.
function bareEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("SANDBOX_") || k.startsWith("EXECFARM_TOKEN")) delete env[k];
  return env;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function cgroupExists(name: string): boolean {
  const walk = (dir: string, depth: number): boolean => {
    if (depth > 6) return false;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      if (e.name === name) return true;
      if (walk(join(dir, e.name), depth + 1)) return true;
    }
    return false;
  };
  return walk("/sys/fs/cgroup", 0);
}

let ef: ExecFarm;
before(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith("SANDBOX_") || k.startsWith("EXECFARM_TOKEN")) delete process.env[k];
  ef = await connect();
});
after(async () => {
  await ef?.close();
});

describe("single-use run", { timeout: 60_000 }, () => {
  test("goja: the result's fields", async () => {
    const r = await ef.run("console.log(6 * 7)", { runtime: "goja", memory: "256Mi", timeoutMs: 10_000 });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "42\n");
    assert.equal(r.terminationReason, "exited");
    assert.equal(r.state, "completed");
    assert.match(r.executionId, /.+/);
    assert.deepEqual(r.truncation, { stdout: false, stderr: false });
  });

  test("shell: stdin, env, stderr, exit code, callbacks", async () => {
    const seen: string[] = [];
    const r = await ef.run('read x; echo "$x $GREETING"; echo oops >&2; exit 3', {
      runtime: "shell", stdin: "hi\n", env: { GREETING: "there" }, onStdout: (c) => seen.push(c),
    });
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, "hi there\n");
    assert.equal(r.stderr, "oops\n");
    assert.equal(seen.join(""), "hi there\n");
  });

  test("a collected result holds at most outputLimit bytes per stream", async () => {
    const r = await ef.run("head -c 100000 /dev/zero | tr '\\0' a", { runtime: "shell", outputLimit: 4096 });
    assert.ok(r.stdout.length <= 4096, `kept ${r.stdout.length} bytes`);
    assert.equal(r.truncation.stdout, true);
    assert.equal(r.stdoutBytes, 100000);
  });

  test("AbortSignal cancels the execution: CancelledError", async () => {
    const ac = new AbortController();
    const p = ef.run("echo started; sleep 30", { runtime: "shell", signal: ac.signal, onStdout: () => ac.abort() });
    await assert.rejects(p, CancelledError);
  });

  test("parseMemory", () => {
    assert.equal(parseMemory("256Mi"), 256 * 2 ** 20);
    assert.equal(parseMemory("1G"), 1e9);
    assert.equal(parseMemory(4096), 4096);
    assert.throws(() => parseMemory("lots"), /want bytes or a quantity/);
  });
});

describe("session sandboxes", { timeout: 60_000 }, () => {
  test("a stdout chunk reaches the callback before the program ends", async () => {
    await using sbx = await ef.createSandbox({ runtime: "shell", ttlSeconds: 60 });
    let ended = false;
    let firstChunk!: () => void;
    const gotChunk = new Promise<void>((r) => { firstChunk = r; });
    let chunks = "";
    // The program prints, then waits until the file "go" exists, which
    // the test writes only once the first chunk has arrived.
    const p = sbx.exec('echo first; while [ ! -e go ]; do sleep 0.02; done; echo second', {
      timeoutMs: 20_000,
      onStdout: (c) => { chunks += c; firstChunk(); },
    }).finally(() => { ended = true; });
    await gotChunk;
    assert.equal(ended, false, "the exec ended before its first chunk was delivered");
    assert.equal(chunks, "first\n");
    assert.equal((await sbx.status()).runningExecs, 1, "the program still runs");
    await sbx.files.write("go", "");
    const r = await p;
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "first\nsecond\n");
  });

  test("await using deletes the sandbox it created", async () => {
    let id: string;
    {
      await using sbx = await ef.createSandbox({ runtime: "shell", labels: { test: "dispose" } });
      id = sbx.id;
      assert.equal((await sbx.status()).ready, true);
    }
    const st = await ef.sandbox(id).status();
    assert.equal(st.ready, false);
    assert.equal(st.state, 3 /* SANDBOX_STATE_NOT_FOUND */);
  });

  test("files move in chunks: 5 MiB from a stream back sha256-identical", async () => {
    await using sbx = await ef.createSandbox({ runtime: "shell" });
    const data = randomBytes(5 << 20);
    async function* pieces() {
      for (let off = 0; off < data.length; off += 300_000) yield data.subarray(off, off + 300_000);
    }
    const w = await sbx.files.write("big/blob.bin", pieces());
    assert.equal(w.bytesWritten, data.length);
    const h = createHash("sha256");
    let n = 0;
    for await (const c of sbx.files.readStream("big/blob.bin")) {
      assert.ok(c.length <= 1 << 20, `chunk of ${c.length} bytes`);
      h.update(c);
      n++;
    }
    assert.ok(n >= 5, `${n} chunks`);
    assert.equal(h.digest("hex"), createHash("sha256").update(data).digest("hex"));
    const r = await sbx.exec("sha256sum big/blob.bin | cut -d' ' -f1");
    assert.equal(r.stdout.trim(), createHash("sha256").update(data).digest("hex"));
  });
});

describe("errors: one type per failure kind, from a real server", { timeout: 60_000 }, () => {
  test("NotFoundError: an unknown sandbox, a missing file", async () => {
    const e1 = await ef.sandbox("sb-does-not-exist").exec("true").catch((e) => e);
    assert.ok(e1 instanceof NotFoundError, String(e1));
    assert.equal(e1.code, "NOT_FOUND");
    assert.equal(e1.reason, "SANDBOX_NOT_FOUND");
    await using sbx = await ef.createSandbox({ runtime: "shell" });
    const e2 = await sbx.files.read("nope.txt").catch((e) => e);
    assert.ok(e2 instanceof NotFoundError, String(e2));
    assert.equal(e2.reason, "FILE_NOT_FOUND");
  });

  test("InvalidArgumentError names its field", async () => {
    const e = await ef.createSandbox({ labels: { "not a key!": "x" } }).catch((e) => e);
    assert.ok(e instanceof InvalidArgumentError, String(e));
    assert.equal(e.code, "INVALID_ARGUMENT");
    assert.match(e.field, /^labels/);
    assert.ok(e.reason);
    assert.match(e.message, /label/i);
  });

  test("ResourceExhaustedError: past the principal's sandbox limit", async () => {
    // serve --max-sandboxes 16: a principal holds at most a quarter, 4.
    const held = [];
    try {
      let err: unknown;
      for (let i = 0; i < 6 && !err; i++) {
        try {
          held.push(await ef.createSandbox({ runtime: "shell" }));
        } catch (e) {
          err = e;
        }
      }
      assert.ok(err instanceof ResourceExhaustedError, String(err));
      assert.equal(err.code, "RESOURCE_EXHAUSTED");
      assert.equal(err.reason, "QUOTA_EXCEEDED");
      assert.equal(held.length, 4);
    } finally {
      await Promise.all(held.map((s) => s.delete()));
    }
  });

  test("UnauthenticatedError: server mode with a wrong token", async () => {
    const e = await connect({ socketPath: ef.embedded!.socketPath, token: "0".repeat(48) }).catch((e) => e);
    assert.ok(e instanceof UnauthenticatedError, String(e));
    assert.equal(e.code, "UNAUTHENTICATED");
  });

  test("UnavailableError: nothing listens at the socket", async () => {
    const e = await connect({ socketPath: join(tmpdir(), `execfarm-sdk-none-${process.pid}.sock`) }).catch((e) => e);
    assert.ok(e instanceof UnavailableError, String(e));
  });
});

describe("modes", { timeout: 60_000 }, () => {
  test("server mode from SANDBOX_SOCKET_PATH and EXECFARM_TOKEN", async () => {
    process.env.SANDBOX_SOCKET_PATH = ef.embedded!.socketPath;
    process.env.EXECFARM_TOKEN = ef.embedded!.token;
    try {
      await using c = await connect();
      assert.equal(c.embedded, undefined);
      assert.equal(c.address, "unix:" + ef.embedded!.socketPath);
      const r = await c.run("echo server", { runtime: "shell" });
      assert.equal(r.stdout, "server\n");
    } finally {
      delete process.env.SANDBOX_SOCKET_PATH;
      delete process.env.EXECFARM_TOKEN;
    }
  });

  test("embedded: close leaves no process, directory or cgroup parent", async () => {
    const c = await connect();
    const emb = c.embedded!;
    try {
      assert.ok(alive(emb.pid));
      assert.ok(existsSync(emb.socketPath));
      assert.match(emb.token, /^[0-9a-f]{48}$/);
      // serve makes its cgroup parent with its first sandbox.
      assert.equal((await c.run("true", { runtime: "shell" })).exitCode, 0);
      assert.ok(cgroupExists(emb.cgroupParent.slice(1)), "cgroup parent while serving");
    } finally {
      await c.close();
    }
    assert.equal(alive(emb.pid), false);
    assert.equal(existsSync(emb.dir), false);
    assert.equal(cgroupExists(emb.cgroupParent.slice(1)), false);
  });

  test("embedded mode as a non-root user: an error that says what is missing", async () => {
    const e = await run(process.execPath, ["--import", "tsx", "-e",
      `import("${join(root, "src", "index.ts")}").then(m => m.connect()).then(() => console.log("connected"), e => console.log(e.name + ": " + e.message))`],
    { cwd: root, env: bareEnv(), uid: 65534, gid: 65534 }).catch((e) => e);
    assert.match(String(e.stdout), /EmbeddedStartError: embedded mode starts `execfarm serve`, which needs root.*SANDBOX_SOCKET_PATH/s);
    assert.equal(EmbeddedStartError.name, "EmbeddedStartError");
  });
});

describe("the README's snippet and the package", { timeout: 60_000 }, () => {
  const expected = "0 42\n exited\nHELLO\n0 hello\n";
  test("runs through tsx in embedded mode", async () => {
    const { stdout } = await run(tsx, ["examples/readme.ts"], { cwd: root, env: bareEnv() });
    assert.equal(stdout, expected);
  });

  test("runs through tsx in server mode (SANDBOX_SOCKET_PATH)", async () => {
    const env = { ...bareEnv(), SANDBOX_SOCKET_PATH: ef.embedded!.socketPath, EXECFARM_TOKEN: ef.embedded!.token, EXECFARM_BIN: "/nonexistent" };
    const { stdout } = await run(tsx, ["examples/readme.ts"], { cwd: root, env });
    assert.equal(stdout, expected);
  });

  test("npm pack: the tarball installs and imports", async () => {
    const dir = mkdtempSync(join(tmpdir(), "execfarm-sdk-pack-"));
    try {
      const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: root });
      const [info] = JSON.parse(stdout.slice(stdout.indexOf("[")));
      const files = info.files.map((f: { path: string }) => f.path);
      for (const f of ["package.json", "dist/index.js", "dist/index.d.ts", "dist/gen/execfarm/v1/session.js"]) assert.ok(files.includes(f), `${f} packed`);
      assert.ok(!files.some((f: string) => f.startsWith("src/") || f.startsWith("test/")), "no sources or tests packed");
      const pkg = join(dir, "node_modules", "@execfarm", "sdk");
      mkdirSync(pkg, { recursive: true });
      await run("tar", ["-xzf", join(dir, info.filename), "-C", pkg, "--strip-components=1"]);
      for (const dep of ["@grpc", "@bufbuild", "@js-sdsl", "@protobufjs", "protobufjs", "long", "lodash.camelcase", "@types"]) {
        if (existsSync(join(root, "node_modules", dep))) symlinkSync(join(root, "node_modules", dep), join(dir, "node_modules", dep));
      }
      writeFileSync(join(dir, "package.json"), '{"type":"module"}');
      writeFileSync(join(dir, "check.js"), 'import { connect, NotFoundError } from "@execfarm/sdk"; console.log(typeof connect, typeof NotFoundError);');
      const out = await run(process.execPath, ["check.js"], { cwd: dir });
      assert.equal(out.stdout, "function function\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
