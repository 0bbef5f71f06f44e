// Embedded mode: this process starts its own `execfarm serve` on a private
// unix socket, in a fresh directory with its own state and script-cache
// directories, cgroup parent, uid window and bearer token, and stops it on
// close (SIGTERM, then SIGKILL after a grace period) or when this process
// exits.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EmbeddedStartError } from "./errors.js";

/** Options of the embedded supervisor (`connect({ spawn: {...} })`). */
export interface SpawnOptions {
  /** The execfarm binary; default EXECFARM_BIN, then bin/execfarm next to the package, then PATH. */
  binary?: string;
  /** How long to wait until it serves, ms (default 15000). */
  healthTimeoutMs?: number;
  /** After SIGTERM on close, how long before SIGKILL, ms (default 10000). */
  stopGraceMs?: number;
  /** "pipe" (default): its log is kept (the last 64 KiB) for error messages; "inherit": it goes to this process's stderr. */
  log?: "pipe" | "inherit";
  /** More `execfarm serve` flags. */
  extraArgs?: string[];
}

/** A running embedded supervisor. */
export interface Embedded {
  readonly socketPath: string;
  readonly token: string;
  readonly pid: number;
  readonly dir: string;
  /** Its cgroup parent (serve nests it under its own cgroup). */
  readonly cgroupParent: string;
  /** The last 64 KiB of its log (with log "pipe"). */
  log(): string;
  /** SIGTERM, then SIGKILL after the grace period; removes its directory. Idempotent. */
  stop(): Promise<void>;
}

// serve's uid window: (max-concurrent + warm-pool + max-sandboxes + 8)
// ranges of 65536 uids (cmd/execfarm/serve.go, uidSlots). With at most 40
// executions and 16 session sandboxes at once, it fits 64 ranges, and the
// SDK's windows are those of [2^31, 2^32): apart from serve's default window
// and from the CLI's embedded supervisors ([2^30, 2^31)).
const rangeSize = 65536;
const windowRanges = 64;
const windowUids = windowRanges * rangeSize;
const firstWindowBase = 2 ** 31;
const windows = Math.floor((2 ** 32 - 1 - firstWindowBase) / windowUids) - 1;
const maxConcurrent = Math.min(availableParallelism(), 40);
const maxSandboxes = 16;
const logBound = 64 << 10;

const live = new Set<ChildProcess>();
let handlersInstalled = false;

// On exit every embedded supervisor still running gets SIGTERM (serve then
// removes its sandboxes and cgroup parent). SIGINT and SIGTERM of this
// process, when nothing else listens for them, stop them too and then end
// the process as the signal would have.
function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", () => {
    for (const c of live) c.kill("SIGTERM");
  });
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      for (const c of live) c.kill("SIGTERM");
      if (process.listenerCount(sig) === 1) {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      }
    };
    process.on(sig, onSignal);
  }
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** findBinary: EXECFARM_BIN, then bin/execfarm in the package's directory, then PATH. */
export function findBinary(explicit?: string): string {
  const fromEnv = explicit ?? process.env.EXECFARM_BIN;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new EmbeddedStartError(`execfarm binary ${fromEnv} (EXECFARM_BIN) is not an executable file`);
    return fromEnv;
  }
  // dist/embedded.js (or src/embedded.ts) is one level below the package's root.
  const next = join(dirname(dirname(fileURLToPath(import.meta.url))), "bin", "execfarm");
  if (executable(next)) return next;
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (d && executable(join(d, "execfarm"))) return join(d, "execfarm");
  }
  throw new EmbeddedStartError(
    "embedded mode: no execfarm binary: set EXECFARM_BIN, put execfarm on PATH, or point at a running server with SANDBOX_SOCKET_PATH (or SANDBOX_TCP_HOST / SANDBOX_TCP_PORT) and EXECFARM_TOKEN",
  );
}

const notRoot =
  "embedded mode starts `execfarm serve`, which needs root (user namespaces, cgroups, uid ranges for sandboxes); " +
  "run as root, or point at a running server instead: SANDBOX_SOCKET_PATH=/run/execfarm/execfarm.sock " +
  "(or SANDBOX_USE_TCP=1 SANDBOX_TCP_HOST=... SANDBOX_TCP_PORT=...) with EXECFARM_TOKEN or EXECFARM_TOKEN_FILE";

// A serve refused because its uid window overlaps another supervisor's
// (host.ErrShared): the next window is tried.
const windowTaken = /overlaps uid window|give this one its own --uid-base/;

/**
 * startEmbedded starts `execfarm serve` and resolves once its log says it
 * serves (within healthTimeoutMs); the caller checks health over gRPC.
 */
export async function startEmbedded(opts: SpawnOptions = {}): Promise<Embedded> {
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    throw new EmbeddedStartError(notRoot);
  }
  const bin = findBinary(opts.binary);
  const start = Math.floor(Math.random() * windows);
  let last: unknown;
  for (let attempt = 0; attempt < 8; attempt++) {
    const base = firstWindowBase + ((start + attempt) % windows + 1) * windowUids;
    try {
      return await startOnce(bin, base, opts);
    } catch (err) {
      last = err;
      if (!(err instanceof EmbeddedStartError && windowTaken.test(err.message))) throw err;
    }
  }
  throw last;
}

async function startOnce(bin: string, uidBase: number, opts: SpawnOptions): Promise<Embedded> {
  const dir = mkdtempSync(join(tmpdir(), "execfarm-sdk-"));
  // Workers pass through the state directory below it.
  chmodSync(dir, 0o711);
  const token = randomBytes(24).toString("hex");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, token + "\n", { mode: 0o600 });
  const socketPath = join(dir, "execfarm.sock");
  const cgroupParent = `/execfarm-sdk-${process.pid}-${randomBytes(4).toString("hex")}`;
  const args = [
    "serve",
    "--socket", socketPath,
    "--token-file", tokenFile,
    "--state-dir", join(dir, "state"),
    "--scripts-cache-dir", join(dir, "scripts"),
    "--cgroup-parent", cgroupParent,
    "--uid-base", String(uidBase),
    "--max-concurrent", String(maxConcurrent),
    "--max-sandboxes", String(maxSandboxes),
    "--log-format", "json",
    ...(opts.extraArgs ?? []),
  ];
  // Its transport comes from the flags alone.
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith("SANDBOX_") || k === "EXECFARM_TOKEN" || k === "EXECFARM_TOKEN_FILE") delete env[k];
  }
  // setpriv --pdeathsig: the supervisor gets SIGTERM when this process dies
  // without closing it (SIGKILL included), and shuts down by itself.
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find(executable);
  const [cmd, cmdArgs] = setpriv ? [setpriv, ["--pdeathsig", "TERM", "--", bin, ...args]] : [bin, args];
  const child = spawn(cmd, cmdArgs, { env, stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  installHandlers();

  let logText = "";
  let exited = false;
  const exitedP = new Promise<void>((resolve) => child.once("exit", () => { exited = true; live.delete(child); resolve(); }));
  let onLine: ((line: string) => void) | undefined;
  let partial = "";
  const onData = (b: Buffer) => {
    const s = b.toString("utf8");
    if (opts.log === "inherit") process.stderr.write(s);
    logText = (logText + s).slice(-logBound);
    partial = (partial + s).slice(-logBound);
    let i: number;
    while ((i = partial.indexOf("\n")) >= 0) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      onLine?.(line);
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  child.once("error", (e) => { logText += String(e); });

  let stopping: Promise<void> | undefined;
  const grace = opts.stopGraceMs ?? 10_000;
  const stop = () => {
    stopping ??= (async () => {
      if (!exited) {
        child.kill("SIGTERM");
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exitedP, new Promise<void>((r) => { timer = setTimeout(() => { child.kill("SIGKILL"); r(); }, grace); })]);
        clearTimeout(timer);
        await exitedP;
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const timeoutMs = opts.healthTimeoutMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    new Promise<"serving">((resolve) => {
      onLine = (line) => {
        try {
          if (JSON.parse(line)["@message"] === "serving") resolve("serving");
        } catch {
          // not a JSON log line
        }
      };
    }),
    exitedP.then(() => "exited" as const),
    new Promise<"timeout">((resolve) => { timer = setTimeout(() => resolve("timeout"), timeoutMs); }),
  ]);
  clearTimeout(timer);
  onLine = undefined;
  if (outcome !== "serving") {
    await stop();
    const why = outcome === "exited" ? `exited (${child.exitCode ?? child.signalCode})` : `did not serve within ${timeoutMs} ms`;
    throw new EmbeddedStartError(`embedded mode: ${bin} serve ${why}: ${lastError(logText)}\n` +
      "(or point at a running server with SANDBOX_SOCKET_PATH and EXECFARM_TOKEN)");
  }
  return { socketPath, token, pid: child.pid!, dir, cgroupParent, log: () => logText, stop };
}

// lastError picks the error serve logged last (a JSON line's @message and
// error), else the log's tail.
function lastError(log: string): string {
  const lines = log.trim().split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const o = JSON.parse(lines[i]!);
      if (o["@level"] === "error" || o.error) return [o["@message"], o.error].filter(Boolean).join(": ");
    } catch {
      if (lines[i]!.trim()) return lines.slice(Math.max(0, i - 5), i + 1).join("\n");
    }
  }
  return log.slice(-2000);
}
