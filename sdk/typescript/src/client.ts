// connect() and the client: single-use executions (prodisco.sandbox.v1) and
// session sandboxes with exec and files (execfarm.v1).
import { credentials, Metadata, type CallOptions, type ClientReadableStream } from "@grpc/grpc-js";
import { StringDecoder } from "node:string_decoder";
import { readFileSync } from "node:fs";
import {
  ExecutionState, Runtime, SandboxServiceClient, TerminationReason,
  executionStateToJSON, terminationReasonToJSON,
  type ExecuteChunk, type ExecutionOutcome, type ResourceLimits, type ResourceUsage,
} from "./gen/prodisco/sandbox/v1/sandbox.js";
import {
  SessionServiceClient, type ExecChunk, type Sandbox as SandboxInfo, type UploadFileResponse,
} from "./gen/execfarm/v1/session.js";
import { CancelledError, ConfigError, fromGrpc } from "./errors.js";
import { startEmbedded, type Embedded, type SpawnOptions } from "./embedded.js";

export type RuntimeName = "goja" | "node" | "shell" | "python";
/** Memory as bytes, or as "256Mi", "1Gi", "512M", "64Ki". */
export type Memory = number | string;

/** Limits of an execution or a sandbox; absent: the server's defaults. */
export interface Limits {
  memory?: Memory;
  timeoutMs?: number;
  /** CPU bandwidth in cores (0.5 = half a core). */
  cpus?: number;
  pids?: number;
  openFiles?: number;
  /** Output kept per stream, bytes. */
  outputLimit?: number;
  cpuTimeMs?: number;
  workspace?: Memory;
}

export interface ConnectOptions {
  /** Unix socket of a running server (default SANDBOX_SOCKET_PATH). */
  socketPath?: string;
  /** host:port of a running server over TCP (default SANDBOX_TCP_HOST, SANDBOX_TCP_PORT). */
  tcpHost?: string;
  tcpPort?: number;
  useTcp?: boolean;
  /** Bearer token (default EXECFARM_TOKEN, else the file EXECFARM_TOKEN_FILE names). */
  token?: string;
  /**
   * Embedded mode: true starts an embedded supervisor, false never does,
   * options start one with them. Absent: embedded when no server is
   * configured (no socket, host, port or SANDBOX_USE_TCP).
   */
  spawn?: boolean | SpawnOptions;
}

export interface Truncation {
  stdout: boolean;
  stderr: boolean;
}

/** How an execution ended. */
export interface Result {
  executionId: string;
  /** Exit status when terminationReason is "exited". */
  exitCode: number;
  signal: number;
  stdout: string;
  stderr: string;
  /** "completed", "failed", "cancelled", "timeout", ... */
  state: string;
  /** "exited", "timeout", "memory", "cpu_time", "pids", "output_limit", "cancelled", "signal", "internal". */
  terminationReason: string;
  success: boolean;
  error: string | undefined;
  usage: ResourceUsage | undefined;
  /** The server kept only part of a stream (its output limit), or this client collected only outputLimit bytes of it. */
  truncation: Truncation;
  /** Bytes the program wrote to each stream, dropped ones included. */
  stdoutBytes: number;
  stderrBytes: number;
}

/** An exec's result: a Result with the streams' bytes too. */
export interface ExecResult extends Result {
  stdoutRaw: Buffer;
  stderrRaw: Buffer;
}

export interface Output {
  /** Called with each chunk of stdout as it arrives. */
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  /** Aborting cancels the execution; the promise rejects with CancelledError. */
  signal?: AbortSignal;
}

export interface RunOptions extends Limits, Output {
  runtime?: RuntimeName;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
}

export interface SandboxOptions extends Limits {
  runtime?: RuntimeName;
  ttlSeconds?: number;
  idleTimeoutSeconds?: number;
  labels?: Record<string, string>;
  profile?: string;
}

export interface ExecOptions extends Output {
  runtime?: RuntimeName;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  timeoutMs?: number;
  outputLimit?: number;
  cpuTimeMs?: number;
}

// What a collected result holds at most per stream when the request names
// no output limit: the server's own default bound is lower.
const defaultCollect = 16 << 20;
// Upload chunks: the server takes at most 1 MiB per message.
const uploadChunk = 1 << 20;

const runtimes: Record<RuntimeName, Runtime> = {
  goja: Runtime.RUNTIME_GOJA,
  node: Runtime.RUNTIME_NODE,
  shell: Runtime.RUNTIME_SHELL,
  python: Runtime.RUNTIME_PYTHON,
};

function runtimeOf(name: RuntimeName | undefined): Runtime {
  if (name === undefined) return Runtime.RUNTIME_UNSPECIFIED;
  const r = runtimes[name];
  if (r === undefined) throw new ConfigError(`unknown runtime ${JSON.stringify(name)}: goja, node, shell or python`);
  return r;
}

const units: Record<string, number> = { "": 1, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

/** parseMemory reads bytes, or a quantity as Kubernetes writes it ("256Mi", "1G"). */
export function parseMemory(m: Memory): number {
  if (typeof m === "number") {
    if (!Number.isSafeInteger(m) || m < 0) throw new ConfigError(`memory ${m}: not a whole number of bytes`);
    return m;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kKMGT]i?|)\s*$/.exec(m);
  if (!match || units[match[2]!] === undefined) throw new ConfigError(`memory ${JSON.stringify(m)}: want bytes or a quantity such as "256Mi" or "1G"`);
  return Math.round(Number(match[1]) * units[match[2]!]!);
}

function limitsOf(l: Limits): ResourceLimits | undefined {
  const r: ResourceLimits = {
    maxMemoryBytes: l.memory === undefined ? 0 : parseMemory(l.memory),
    maxCpuPercent: l.cpus === undefined ? 0 : Math.round(l.cpus * 100),
    maxFileDescriptors: l.openFiles ?? 0,
    maxProcesses: l.pids ?? 0,
    maxOutputBytes: l.outputLimit ?? 0,
    timeoutMs: l.timeoutMs ?? 0,
    cpuTimeMs: l.cpuTimeMs ?? 0,
    workspaceBytes: l.workspace === undefined ? 0 : parseMemory(l.workspace),
  };
  return Object.values(r).some((v) => v !== 0) ? r : undefined;
}

function bytesOf(s: string | Uint8Array | undefined): Buffer {
  if (s === undefined) return Buffer.alloc(0);
  return typeof s === "string" ? Buffer.from(s, "utf8") : Buffer.from(s.buffer, s.byteOffset, s.byteLength);
}

function lowerSuffix(name: string, prefix: string): string {
  return name.startsWith(prefix) ? name.slice(prefix.length).toLowerCase() : name.toLowerCase();
}

/** Collects one stream up to a bound, decoding text across chunk boundaries. */
class Collector {
  private parts: Buffer[] = [];
  private size = 0;
  truncated = false;
  private decoder = new StringDecoder("utf8");
  constructor(private readonly bound: number, private readonly cb?: (chunk: string) => void) {}
  add(b: Buffer | string): void {
    const buf = typeof b === "string" ? Buffer.from(b, "utf8") : b;
    if (this.cb) {
      const text = typeof b === "string" ? b : this.decoder.write(b);
      if (text) this.cb(text);
    }
    const room = this.bound - this.size;
    if (buf.length > room) this.truncated = true;
    const kept = buf.length > room ? buf.subarray(0, Math.max(room, 0)) : buf;
    if (kept.length) {
      this.parts.push(kept);
      this.size += kept.length;
    }
  }
  finish(): void {
    if (this.cb) {
      const rest = this.decoder.end();
      if (rest) this.cb(rest);
    }
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

function resultOf(
  res: { success: boolean; error?: string | undefined; state: ExecutionState; outcome?: ExecutionOutcome | undefined },
  executionId: string, out: Collector, err: Collector,
): ExecResult {
  const o = res.outcome;
  const stdoutRaw = out.bytes();
  const stderrRaw = err.bytes();
  return {
    executionId: o?.executionId || executionId,
    exitCode: o?.exitCode ?? 0,
    signal: o?.signal ?? 0,
    stdout: stdoutRaw.toString("utf8"),
    stderr: stderrRaw.toString("utf8"),
    stdoutRaw,
    stderrRaw,
    state: lowerSuffix(executionStateToJSON(res.state), "EXECUTION_STATE_"),
    terminationReason: lowerSuffix(terminationReasonToJSON(o?.terminationReason ?? TerminationReason.TERMINATION_REASON_UNSPECIFIED), "TERMINATION_REASON_"),
    success: res.success,
    error: res.error,
    usage: o?.usage,
    truncation: { stdout: (o?.stdoutTruncated ?? false) || out.truncated, stderr: (o?.stderrTruncated ?? false) || err.truncated },
    stdoutBytes: o?.stdoutBytes ?? stdoutRaw.length,
    stderrBytes: o?.stderrBytes ?? stderrRaw.length,
  };
}

/**
 * drain reads a server stream to its end, calling onChunk for each message;
 * an AbortSignal cancels the call. Errors come out as this package's.
 */
function drain<T>(call: ClientReadableStream<T>, onChunk: (c: T) => void, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      call.cancel();
    };
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = (err?: unknown) => {
      signal?.removeEventListener("abort", onAbort);
      if (err === undefined) return resolve();
      if (aborted) return reject(new CancelledError("cancelled by its AbortSignal", { code: "CANCELLED", grpcCode: 1 }, { cause: signal?.reason }));
      reject(fromGrpc(err));
    };
    call.on("data", (c: T) => {
      try {
        onChunk(c);
      } catch (e) {
        call.cancel();
        done(e);
      }
    });
    call.on("error", (e) => done(e));
    call.on("end", () => done());
  });
}

function unary<Req, Res>(fn: (req: Req, md: Metadata, opts: Partial<CallOptions>, cb: (e: Error | null, r: Res) => void) => unknown, req: Req, md: Metadata): Promise<Res> {
  return new Promise((resolve, reject) => {
    fn(req, md, {}, (e, r) => (e ? reject(fromGrpc(e)) : resolve(r)));
  });
}

const asyncDispose: symbol | undefined = (Symbol as { asyncDispose?: symbol }).asyncDispose;
const asyncDisposeFallback = Symbol.for("Symbol.asyncDispose");

// registerDispose puts f under Symbol.asyncDispose where the runtime has
// it and under the symbol transpilers use where it does not.
function registerDispose(proto: object, f: (this: any) => Promise<void>): void {
  for (const s of [asyncDispose, asyncDisposeFallback]) {
    if (s) Object.defineProperty(proto, s, { value: f, configurable: true, writable: true });
  }
}

/** A connection to an execfarm server: connect()'s result. */
export class ExecFarm {
  /** The embedded supervisor this client started, if it did. */
  readonly embedded: Embedded | undefined;
  /** The server's address as grpc-js dials it ("unix:/path", "host:port"). */
  readonly address: string;
  /** @internal */ readonly sandboxes: SandboxServiceClient;
  /** @internal */ readonly sessions: SessionServiceClient;
  /** @internal */ readonly md: Metadata;
  private closed?: Promise<void>;
  /** close(), for `await using` (registered under Symbol.asyncDispose and Symbol.for("Symbol.asyncDispose")). */
  declare [Symbol.asyncDispose]: () => Promise<void>;

  /** @internal */
  constructor(address: string, token: string | undefined, embedded?: Embedded) {
    this.address = address;
    this.embedded = embedded;
    const opts = { "grpc.max_receive_message_length": 8 << 20 };
    this.sandboxes = new SandboxServiceClient(address, credentials.createInsecure(), opts);
    this.sessions = new SessionServiceClient(address, credentials.createInsecure(), opts);
    this.md = new Metadata();
    if (token) this.md.set("authorization", `Bearer ${token}`);
  }

  /** Runs code once in a fresh sandbox and resolves with how it ended. */
  async run(code: string, opts: RunOptions = {}): Promise<Result> {
    const out = new Collector(opts.outputLimit ?? defaultCollect, opts.onStdout);
    const err = new Collector(opts.outputLimit ?? defaultCollect, opts.onStderr);
    const call = this.sandboxes.executeStream({
      code, runtime: runtimeOf(opts.runtime), limits: limitsOf(opts), stdin: bytesOf(opts.stdin), env: opts.env ?? {},
      rawOutput: true, deterministic: false, seed: 0,
    }, this.md);
    let id = "";
    let last: ExecuteChunk["result"];
    await drain(call, (c: ExecuteChunk) => {
      id ||= c.executionId;
      if (c.output !== undefined) out.add(c.output);
      else if (c.errorOutput !== undefined) err.add(c.errorOutput);
      else if (c.result) last = c.result;
    }, opts.signal);
    out.finish();
    err.finish();
    if (!last) throw new ExecfarmStreamError("the execution's stream ended without its result");
    const { stdoutRaw: _o, stderrRaw: _e, ...r } = resultOf(last, id, out, err);
    return r;
  }

  /** Creates a session sandbox; `await using` deletes it. */
  async createSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
    const info = await unary(this.sessions.createSandbox.bind(this.sessions), {
      runtime: runtimeOf(opts.runtime), limits: limitsOf(opts), labels: opts.labels ?? {},
      shutdownAfterSeconds: opts.ttlSeconds, idleTimeoutSeconds: opts.idleTimeoutSeconds, profile: opts.profile ?? "",
    }, this.md);
    return new Sandbox(this, info.sandboxId, info, true);
  }

  /** Attaches to an existing sandbox; disposing it does not delete it. */
  sandbox(id: string): Sandbox {
    return new Sandbox(this, id, undefined, false);
  }

  /** The server's health (HealthCheck). */
  async health(): Promise<{ healthy: boolean; version: string }> {
    const r = await unary(this.sandboxes.healthCheck.bind(this.sandboxes), {}, this.md);
    return { healthy: r.healthy, version: r.version };
  }

  /** Closes the connection and stops the embedded supervisor, if any. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.sandboxes.close();
      this.sessions.close();
      await this.embedded?.stop();
    })();
    return this.closed;
  }
}
registerDispose(ExecFarm.prototype, function (this: ExecFarm) { return this.close(); });

class ExecfarmStreamError extends CancelledError {}

/** A session sandbox. */
export class Sandbox {
  readonly files: Files;
  private deleted?: Promise<void>;
  /** Deletes a sandbox that createSandbox made (not one sandbox(id) attached to), for `await using`. */
  declare [Symbol.asyncDispose]: () => Promise<void>;

  /** @internal */
  constructor(private readonly ef: ExecFarm, readonly id: string, readonly info: SandboxInfo | undefined, private readonly owned: boolean) {
    this.files = new Files(ef, id);
  }

  /** Runs a command (a shell command line, or a program of the sandbox's runtime) and resolves with how it ended. */
  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const out = new Collector(opts.outputLimit ?? defaultCollect, opts.onStdout);
    const err = new Collector(opts.outputLimit ?? defaultCollect, opts.onStderr);
    const call = this.ef.sessions.exec({
      sandboxId: this.id, code: command, argv: [], runtime: runtimeOf(opts.runtime), stdin: bytesOf(opts.stdin), keepStdinOpen: false,
      env: opts.env ?? {}, workdir: opts.cwd ?? "", timeoutMs: opts.timeoutMs, maxOutputBytes: opts.outputLimit, cpuTimeMs: opts.cpuTimeMs,
    }, this.ef.md);
    let id = "";
    let last: ExecChunk["result"];
    await drain(call, (c: ExecChunk) => {
      id ||= c.executionId;
      if (c.stdout !== undefined) out.add(c.stdout);
      else if (c.stderr !== undefined) err.add(c.stderr);
      else if (c.result) last = c.result;
    }, opts.signal);
    out.finish();
    err.finish();
    if (!last) throw new ExecfarmStreamError("the exec's stream ended without its result");
    return resultOf(last, id, out, err);
  }

  /** The sandbox's status. */
  status(): Promise<SandboxInfo> {
    return unary(this.ef.sessions.getSandbox.bind(this.ef.sessions), { sandboxId: this.id }, this.ef.md);
  }

  /** Deletes the sandbox (its running execs end cancelled). Idempotent. */
  delete(): Promise<void> {
    this.deleted ??= unary(this.ef.sessions.deleteSandbox.bind(this.ef.sessions), { sandboxId: this.id }, this.ef.md).then(() => undefined);
    return this.deleted;
  }

  /** @internal the disposer: deletes a sandbox this client created. */
  async dispose(): Promise<void> {
    if (this.owned) await this.delete();
  }
}
registerDispose(Sandbox.prototype, function (this: Sandbox) { return this.dispose(); });

/** A sandbox's files; contents move in chunks of at most 1 MiB. */
export class Files {
  /** @internal */
  constructor(private readonly ef: ExecFarm, private readonly id: string) {}

  /**
   * Writes a file (parents created): text as UTF-8, bytes, or a stream of
   * bytes (any async iterable, a Readable included), sent as it is read.
   */
  write(path: string, data: string | Uint8Array | AsyncIterable<Uint8Array | string>, opts: { mode?: number } = {}): Promise<UploadFileResponse> {
    return new Promise((resolve, reject) => {
      const call = this.ef.sessions.uploadFile(this.ef.md, (e, r) => (e ? reject(fromGrpc(e)) : resolve(r)));
      const send = async () => {
        const put = async (b: Buffer) => {
          for (let off = 0; off < b.length; off += uploadChunk) {
            if (!call.write({ data: b.subarray(off, off + uploadChunk) })) {
              await new Promise<void>((r) => call.once("drain", () => r()));
            }
          }
        };
        call.write({ header: { sandboxId: this.id, path, mode: opts.mode ?? 0 } });
        if (typeof data === "string" || data instanceof Uint8Array) {
          await put(bytesOf(data));
        } else {
          for await (const c of data) await put(bytesOf(c));
        }
        call.end();
      };
      send().catch((e) => {
        call.cancel();
        reject(e);
      });
    });
  }

  /** Reads a file whole: as bytes, or as text with { encoding: "utf8" }. */
  read(path: string): Promise<Buffer>;
  read(path: string, opts: { encoding: BufferEncoding }): Promise<string>;
  async read(path: string, opts?: { encoding: BufferEncoding }): Promise<Buffer | string> {
    const parts: Buffer[] = [];
    for await (const c of this.readStream(path)) parts.push(c);
    const b = Buffer.concat(parts);
    return opts ? b.toString(opts.encoding) : b;
  }

  /** Streams a file's content in chunks as the server sends them. */
  async *readStream(path: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Buffer> {
    const call = this.ef.sessions.downloadFile({ sandboxId: this.id, path }, this.ef.md);
    const onAbort = () => call.cancel();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const m of call as AsyncIterable<{ data?: Buffer }>) {
        if (m.data !== undefined) yield m.data;
      }
    } catch (e) {
      throw fromGrpc(e);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }
}

function envTruthy(v: string | undefined): boolean {
  return v === "1" || v?.toLowerCase() === "true";
}

/**
 * connect: server mode when a server is configured (options, or
 * SANDBOX_SOCKET_PATH, SANDBOX_USE_TCP, SANDBOX_TCP_HOST, SANDBOX_TCP_PORT;
 * a host or port alone means TCP, as ProDisco's client reads them), with
 * the token of EXECFARM_TOKEN or EXECFARM_TOKEN_FILE; else embedded mode,
 * which starts `execfarm serve` (needs root). Resolves once the server
 * answers HealthCheck.
 */
export async function connect(opts: ConnectOptions = {}): Promise<ExecFarm> {
  const env = process.env;
  const mode = env.SANDBOX_TRANSPORT_MODE;
  if (mode && mode !== "insecure") throw new ConfigError(`SANDBOX_TRANSPORT_MODE=${mode}: this version of @execfarm/sdk speaks only insecure (a unix socket or plain TCP)`);
  const socketPath = opts.socketPath ?? env.SANDBOX_SOCKET_PATH;
  const tcpHost = opts.tcpHost ?? env.SANDBOX_TCP_HOST;
  let tcpPort = opts.tcpPort;
  if (tcpPort === undefined && env.SANDBOX_TCP_PORT) {
    tcpPort = Number(env.SANDBOX_TCP_PORT);
    if (!Number.isInteger(tcpPort) || tcpPort <= 0 || tcpPort > 65535) throw new ConfigError(`SANDBOX_TCP_PORT ${JSON.stringify(env.SANDBOX_TCP_PORT)} is not a port number`);
  }
  let useTcp = opts.useTcp;
  if (useTcp === undefined) useTcp = env.SANDBOX_USE_TCP ? envTruthy(env.SANDBOX_USE_TCP) : tcpHost !== undefined || tcpPort !== undefined;
  const configured = socketPath !== undefined || useTcp;
  const spawn = opts.spawn ?? !configured;

  let ef: ExecFarm;
  if (spawn) {
    const embedded = await startEmbedded(typeof spawn === "object" ? spawn : {});
    ef = new ExecFarm("unix:" + embedded.socketPath, embedded.token, embedded);
  } else {
    let token = opts.token ?? env.EXECFARM_TOKEN;
    if (!token && env.EXECFARM_TOKEN_FILE) {
      try {
        token = readFileSync(env.EXECFARM_TOKEN_FILE, "utf8").trim();
      } catch (e) {
        throw new ConfigError(`EXECFARM_TOKEN_FILE ${env.EXECFARM_TOKEN_FILE}: ${(e as Error).message}`, {}, { cause: e });
      }
    }
    const address = useTcp ? `${tcpHost || "localhost"}:${tcpPort ?? 50051}` : "unix:" + (socketPath || "/run/execfarm/execfarm.sock");
    ef = new ExecFarm(address, token);
  }
  try {
    await ef.health();
  } catch (e) {
    await ef.close();
    throw e;
  }
  return ef;
}
