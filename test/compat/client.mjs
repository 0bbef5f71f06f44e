// ProDisco compatibility client: talks to an execfarm supervisor through
// ProDisco's original proto (prodisco_sandbox.proto, no execfarm fields)
// with the stock @grpc/grpc-js + @grpc/proto-loader stack a ProDisco client
// uses.
//
// Usage: node client.mjs SOCKET_PATH
//        node client.mjs --descriptor
//
// On success it prints one JSON object with what each RPC returned and
// exits 0. With --descriptor it prints {"fileDescriptorProto": BASE64}
// instead: the FileDescriptorProto that proto-loader built from
// prodisco_sandbox.proto, which compat_test.go compares with execfarm's. On any failure it prints "compat: FAIL <step>: <why>" to stderr
// and exits 1.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const here = path.dirname(fileURLToPath(import.meta.url));
const CALL_TIMEOUT_MS = 30_000;

class CompatError extends Error {}

function check(cond, msg) {
  if (!cond) throw new CompatError(msg);
}

function deadline(ms = CALL_TIMEOUT_MS) {
  return new Date(Date.now() + ms);
}

function unary(client, method, req) {
  return new Promise((resolve, reject) => {
    client[method](req, { deadline: deadline() }, (err, res) => {
      if (err) reject(err);
      else resolve(res);
    });
  });
}

function stream(client, method, req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const call = client[method](req, { deadline: deadline() });
    call.on('data', (c) => chunks.push({ ...c, receivedAtMs: Date.now() }));
    call.on('error', reject);
    call.on('end', () => resolve(chunks));
  });
}

function describe(err) {
  if (err && typeof err.code === 'number') {
    const name = Object.keys(grpc.status).find((k) => grpc.status[k] === err.code) ?? err.code;
    return `gRPC ${name}: ${err.details ?? err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

async function step(name, fn) {
  try {
    return await fn();
  } catch (err) {
    const e = new CompatError(`${name}: ${describe(err)}`);
    e.cause = err;
    throw e;
  }
}

async function testExecute(client) {
  const res = await unary(client, 'Execute', { code: 'console.log("hello from execfarm")' });
  check(res.success === true, `success=${res.success}, error=${JSON.stringify(res.error)}`);
  // ProDisco's output: console lines joined by "\n", no trailing newline.
  check(res.output === 'hello from execfarm', `output=${JSON.stringify(res.output)}, want "hello from execfarm"`);
  check(res.error === undefined || res.error === '', `error set on success: ${JSON.stringify(res.error)}`);
  check(Number.isInteger(res.executionTimeMs) && res.executionTimeMs >= 0, `executionTimeMs=${res.executionTimeMs}`);
  return { success: res.success, output: res.output, executionTimeMs: res.executionTimeMs };
}

// Three lines 300 ms apart, written with timers, so a server that only
// flushes at exit is told apart from one that streams.
const STREAM_CODE = `
for (let i = 1; i <= 3; i++) {
  console.log("line " + i);
  if (i < 3) await new Promise((r) => setTimeout(r, 300));
}
`;

async function testExecuteStream(client) {
  const chunks = await stream(client, 'ExecuteStream', { code: STREAM_CODE });
  check(chunks.length >= 2, `got ${chunks.length} chunks, want output chunks then a result`);
  const last = chunks[chunks.length - 1];
  check(last.chunk === 'result', `last chunk is ${JSON.stringify(last.chunk)}, want "result"`);
  const body = chunks.slice(0, -1);
  for (const c of body) {
    check(c.chunk === 'output' || c.chunk === 'errorOutput', `chunk before the last is ${JSON.stringify(c.chunk)}, want output or errorOutput`);
  }
  const outs = body.filter((c) => c.chunk === 'output');
  const errs = body.filter((c) => c.chunk === 'errorOutput');
  const stdout = outs.map((c) => c.output).join('');
  check(stdout === 'line 1\nline 2\nline 3\n', `stdout=${JSON.stringify(stdout)}, want three lines`);
  check(errs.length === 0, `unexpected stderr: ${JSON.stringify(errs.map((c) => c.errorOutput).join(''))}`);
  const ids = new Set(chunks.map((c) => c.executionId));
  check(ids.size === 1 && !ids.has(''), `execution ids across chunks: ${JSON.stringify([...ids])}`);
  for (const c of chunks) {
    check(Number.isInteger(c.timestampMs) && c.timestampMs > 0, `chunk timestampMs=${c.timestampMs}`);
  }
  const r = last.result;
  check(r.success === true, `result.success=${r.success}, error=${JSON.stringify(r.error)}`);
  check(r.state === 'EXECUTION_STATE_COMPLETED', `result.state=${r.state}`);
  // Real-time: the first line must reach the client well before the end
  // (the program runs >= 600 ms after printing it).
  const leadMs = last.receivedAtMs - outs[0].receivedAtMs;
  check(leadMs >= 300, `first output arrived only ${leadMs} ms before the result: not streamed`);
  return {
    executionId: last.executionId,
    outputChunks: outs.length,
    output: stdout,
    firstOutputLeadMs: leadMs,
    result: { success: r.success, state: r.state, executionTimeMs: r.executionTimeMs },
  };
}

async function testAsync(client) {
  const code = 'await new Promise((r) => setTimeout(r, 200)); console.log("async done");';
  const started = await unary(client, 'ExecuteAsync', { code });
  check(typeof started.executionId === 'string' && started.executionId !== '', `executionId=${JSON.stringify(started.executionId)}`);
  check(['EXECUTION_STATE_PENDING', 'EXECUTION_STATE_RUNNING'].includes(started.state), `initial state=${started.state}, want PENDING or RUNNING`);
  const got = await unary(client, 'GetExecution', { executionId: started.executionId, wait: true });
  check(got.executionId === started.executionId, `GetExecution id=${got.executionId}, want ${started.executionId}`);
  check(got.state === 'EXECUTION_STATE_COMPLETED', `state=${got.state}, want COMPLETED`);
  check(got.output === 'async done\n', `output=${JSON.stringify(got.output)}, want "async done\\n"`);
  check(got.outputLength === Buffer.byteLength(got.output), `outputLength=${got.outputLength}, want ${Buffer.byteLength(got.output)}`);
  check(got.result != null, 'result missing in terminal state');
  check(got.result.success === true, `result.success=${got.result.success}, error=${JSON.stringify(got.result.error)}`);
  check(got.result.state === 'EXECUTION_STATE_COMPLETED', `result.state=${got.result.state}`);
  // Incremental read from the end: nothing new, same total length.
  const tail = await unary(client, 'GetExecution', { executionId: started.executionId, outputOffset: got.outputLength });
  check(tail.output === '' && tail.outputLength === got.outputLength, `read at offset ${got.outputLength}: output=${JSON.stringify(tail.output)} length=${tail.outputLength}`);
  return {
    executionId: started.executionId,
    initialState: started.state,
    state: got.state,
    output: got.output,
    outputLength: got.outputLength,
    result: { success: got.result.success, state: got.result.state },
  };
}

async function testUnknownExecution(client) {
  try {
    await unary(client, 'GetExecution', { executionId: '00000000-0000-0000-0000-000000000000' });
  } catch (err) {
    check(err.code === grpc.status.NOT_FOUND, `got ${describe(err)}, want NOT_FOUND`);
    return { code: 'NOT_FOUND' };
  }
  throw new CompatError('GetExecution of an unknown id succeeded, want NOT_FOUND');
}

async function testHealth(client) {
  const res = await unary(client, 'HealthCheck', {});
  check(res.healthy === true, `healthy=${res.healthy}`);
  return { healthy: res.healthy, kubernetesContext: res.kubernetesContext };
}

async function main() {
  const arg = process.argv[2];
  if (!arg) {
    console.error('usage: node client.mjs SOCKET_PATH | --descriptor');
    process.exit(2);
  }
  const protoFile = path.join(here, 'prodisco_sandbox.proto');
  if (arg === '--descriptor') {
    // keepCase keeps the .proto's field names in the descriptor; the
    // client below uses proto-loader's camelCase, as ProDisco's does.
    const raw = protoLoader.loadSync(protoFile, { keepCase: true });
    const fdps = raw['prodisco.sandbox.v1.SandboxService'].Execute.requestType.fileDescriptorProtos;
    check(fdps.length === 1, `proto-loader built ${fdps.length} file descriptors, want 1`);
    process.stdout.write(JSON.stringify({ fileDescriptorProto: Buffer.from(fdps[0]).toString('base64') }) + '\n');
    return;
  }
  const socket = arg;
  const def = protoLoader.loadSync(protoFile, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def);
  const client = new pkg.prodisco.sandbox.v1.SandboxService(
    `unix://${path.resolve(socket)}`,
    grpc.credentials.createInsecure(),
  );
  try {
    await step('connect', () => new Promise((resolve, reject) => {
      client.waitForReady(deadline(10_000), (err) => (err ? reject(err) : resolve()));
    }));
    const results = {};
    results.healthCheck = await step('HealthCheck', () => testHealth(client));
    results.execute = await step('Execute', () => testExecute(client));
    results.executeStream = await step('ExecuteStream', () => testExecuteStream(client));
    results.executeAsync = await step('ExecuteAsync+GetExecution', () => testAsync(client));
    results.unknownExecution = await step('GetExecution(unknown id)', () => testUnknownExecution(client));
    process.stdout.write(JSON.stringify(results) + '\n');
  } finally {
    client.close();
  }
}

main().catch((err) => {
  console.error(`compat: FAIL ${err instanceof CompatError ? err.message : describe(err)}`);
  process.exit(1);
});
