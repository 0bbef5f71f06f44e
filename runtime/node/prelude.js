// execfarm node prelude: the first code node runs in a sandbox (node -e).
// It reads its configuration from process.argv[1] (JSON, written by
// node.Argv in Go), empties process.env, hides the ways back to node's own
// require, defines the globals k8s and kc, reads the program (the output
// of node.Transform) from fd 3 and runs it with the sandbox require.
//
// The OS sandbox (namespaces, seccomp, read-only root) and node's
// permission model (--experimental-permission, set by node.Argv) are the
// real boundary; this file only makes the documented surface the easy one.
// In test mode it also keeps the test results out of the code's reach
// (the harness, a nonce on every results line, frozen intrinsics).
'use strict';
(() => {
  const Module = require('node:module');
  const fs = require('node:fs');
  const path = require('node:path');

  const cfg = JSON.parse(process.argv[1] || '{}');
  const modulesDir = path.join(cfg.bundle || '/.execfarm/node', 'node_modules');
  const allowed = new Set(Array.isArray(cfg.allowed) ? cfg.allowed : []);
  const mainFile = '/workspace/main.ts';
  // exitUnsettled is node's exit code for an unsettled top-level await.
  const exitUnsettled = 13;

  // Nothing from the supervisor's or the caller's environment reaches the
  // program (seed: the reference leaked process.env into its vm context).
  for (const k of Object.keys(process.env)) delete process.env[k];
  process.argv.splice(1, process.argv.length - 1, mainFile);

  const bundleRequire = Module.createRequire(path.join(modulesDir, '_'));
  const isBuiltin = Module.isBuiltin;

  function notAvailable(name) {
    const e = new Error(`Module '${name}' not available in sandbox`);
    e.code = 'MODULE_NOT_FOUND';
    return e;
  }

  // packageRoot returns the package name of a bare specifier ("@scope/pkg"
  // or "pkg") if spec is one, with every further segment a plain name, and
  // "" otherwise (relative, absolute, URL-like, "..", empty segments).
  function packageRoot(spec) {
    if (spec === '' || spec !== spec.trim() || /[\\:\0]/.test(spec)) return '';
    const parts = spec.split('/');
    const n = spec.startsWith('@') ? 2 : 1;
    if (parts.length < n) return '';
    for (const p of parts) {
      if (p === '' || p === '.' || p === '..') return '';
    }
    if (parts[0].startsWith('.')) return '';
    return parts.slice(0, n).join('/');
  }

  // sandboxRequire admits allow-listed packages and their subpaths, loaded
  // from the bundle only; everything else, Node built-ins included, fails
  // with "Module '<name>' not available in sandbox".
  let sandboxRequire = function (name) {
    const spec = typeof name === 'string' ? name : String(name);
    const root = packageRoot(spec);
    if (root === '' || isBuiltin(spec) || isBuiltin(root) || !allowed.has(root)) {
      throw notAvailable(spec);
    }
    let file;
    try {
      file = bundleRequire.resolve(spec);
    } catch {
      throw notAvailable(spec);
    }
    // Global folders (/usr/share/nodejs, ~/.node_modules) are not the bundle.
    if (!file.startsWith(path.join(modulesDir, root) + path.sep)) {
      throw notAvailable(spec);
    }
    return bundleRequire(file);
  };

  function lazyGlobal(name, load) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      enumerable: false,
      get() {
        const value = load();
        Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
        return value;
      },
      set(value) {
        Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
      },
    });
  }

  // The console: node's own Console writing to the real stdout and stderr,
  // with console.warn on stdout (as in goja and in ProDisco, whose
  // console.warn is not an error stream; error, trace and assert write to
  // stderr). With a console channel (cfg.consoleFd, Go package
  // runtime/jsconsole) every line also goes there with its level, in the
  // order written, within ProDisco's caps (5000 lines, 500000 characters
  // with prefixes), and so does the message of an uncaught error.
  const consoleFd = Number.isInteger(cfg.consoleFd) ? cfg.consoleFd : -1;
  const prefixes = { L: '', I: '[INFO] ', W: '[WARN] ', E: '[ERROR] ', e: '' };
  let lineCount = 0, charCount = 0, consoleFull = false;
  const record = (kind, text) => {
    if (consoleFd < 0) return;
    if (kind !== 'X') {
      if (consoleFull) return;
      const n = prefixes[kind].length + text.length;
      if (lineCount >= 5000 || charCount + n > 500000) {
        consoleFull = true;
        return;
      }
      lineCount++;
      charCount += n;
    }
    try { fs.writeSync(consoleFd, kind + JSON.stringify(text) + '\n'); } catch {}
  };
  const textOf = (chunk) => {
    if (typeof chunk === 'string') return chunk;
    if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString();
    return String(chunk);
  };
  const stdoutWrite = process.stdout.write.bind(process.stdout);
  const stderrWrite = process.stderr.write.bind(process.stderr);
  let level = null; // the kind of the console method writing now, if it says
  // A Console writes each call with one write(); it also adds and removes
  // an 'error' listener around it, hence the EventEmitter.
  const sink = (write, kind) => Object.assign(new (require('node:events'))(), {
    write(chunk, encoding, cb) {
      record(level || kind, textOf(chunk).replace(/\n$/, ''));
      return write(chunk, encoding, cb);
    },
  });
  const base = new (require('node:console').Console)({ stdout: sink(stdoutWrite, 'L'), stderr: sink(stderrWrite, 'E') });
  const leveled = (kind, fn) => function (...args) {
    level = kind;
    try {
      return fn(...args);
    } finally {
      level = null;
    }
  };
  for (const name of Object.keys(console)) {
    if (typeof base[name] === 'function') console[name] = base[name];
  }
  console.info = leveled('I', base.info);
  console.warn = leveled('W', base.log);
  console.error = leveled('E', base.error);
  if (consoleFd >= 0) {
    // As in ProDisco, a write to process.stdout or process.stderr is a
    // line (one trailing newline dropped), process.stderr's an error line
    // without prefix.
    process.stdout.write = function write(chunk, encoding, cb) {
      record('L', textOf(chunk).replace(/\n$/, ''));
      return stdoutWrite(chunk, encoding, cb);
    };
    process.stderr.write = function write(chunk, encoding, cb) {
      record('e', textOf(chunk).replace(/\n$/, ''));
      return stderrWrite(chunk, encoding, cb);
    };
    // ProDisco's error text: an Error's message, else String(value).
    process.on('uncaughtExceptionMonitor', (err) => {
      let msg;
      try {
        msg = err instanceof Error ? String(err.message) : String(err);
      } catch {
        msg = '(a thrown value whose description threw)';
      }
      record('X', msg);
    });
  }

  // A deterministic run (cfg.deterministic; Go package
  // runtime/deterministic, whose generator, the same as goja's, is
  // cfg.deterministic.random): the clock starts at epochMs and moves only
  // when a timer fires, to the time the timer was due on it; Math.random,
  // crypto.getRandomValues and crypto.randomUUID come from the seeded
  // generator.
  if (cfg.deterministic) {
    const det = cfg.deterministic;
    const rand = require('node:vm').runInThisContext(det.random, { filename: 'deterministic.js' })(det.seed);
    let elapsed = 0; // ms since epochMs, fractions kept as timers' delays
    const now = () => det.epochMs + Math.floor(elapsed);
    const RealDate = Date;
    function DeterministicDate(...args) {
      if (!new.target) return new RealDate(now()).toString();
      return Reflect.construct(RealDate, args.length === 0 ? [now()] : args, new.target);
    }
    Object.setPrototypeOf(DeterministicDate, RealDate); // parse, UTC
    DeterministicDate.prototype = RealDate.prototype;
    DeterministicDate.now = now;
    Object.defineProperty(RealDate.prototype, 'constructor', { value: DeterministicDate, writable: true, configurable: true });
    globalThis.Date = DeterministicDate;
    Math.random = () => rand.float64();
    if (globalThis.performance) {
      Object.defineProperty(performance, 'now', { value: () => elapsed, writable: true, configurable: true });
      Object.defineProperty(performance, 'timeOrigin', { value: det.epochMs, configurable: true });
    }
    if (globalThis.crypto) {
      const fill = (ta) => {
        if (!ArrayBuffer.isView(ta) || ta instanceof DataView || ta instanceof Float32Array || ta instanceof Float64Array) {
          throw new TypeError('The data argument must be an integer-type TypedArray');
        }
        const bytes = new Uint8Array(ta.buffer, ta.byteOffset, ta.byteLength);
        for (let i = 0; i < bytes.length; i += 4) {
          const v = rand.uint32();
          for (let j = 0; j < 4 && i + j < bytes.length; j++) bytes[i + j] = (v >>> (8 * j)) & 0xff;
        }
        return ta;
      };
      const uuid = () => {
        const b = fill(new Uint8Array(16));
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
        return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      };
      // Node defines getRandomValues as an own property it will not let
      // go: the global is a Crypto whose other members are the real one's.
      const real = globalThis.crypto;
      const wrapped = Object.create(real, {
        getRandomValues: { value: fill, writable: true, configurable: true },
        randomUUID: { value: uuid, writable: true, configurable: true },
        subtle: { get: () => real.subtle, configurable: true },
      });
      Object.defineProperty(globalThis, 'crypto', { value: wrapped, writable: true, configurable: true, enumerable: false });
    }
    // Node's rule for a delay: below 1, above 2^31-1 or not a number is 1.
    const delayOf = (d) => {
      d = Number(d);
      return d >= 1 && d <= 2147483647 ? d : 1;
    };
    // Timers: one queue in the order of this clock (due, then creation),
    // driven by one real timer armed for the head's real deadline, so that
    // their order does not depend on how long code took between them.
    // Each still waits its real delay.
    const realSetTimeout = setTimeout, realClearTimeout = clearTimeout;
    const realNow = () => Number(process.hrtime.bigint()) / 1e6;
    const queue = []; // sorted by (due, seq)
    const byId = new Map();
    let seq = 0, nextId = 1, wake = null;
    const insert = (e) => {
      let i = queue.length;
      while (i > 0 && (queue[i - 1].due > e.due || (queue[i - 1].due === e.due && queue[i - 1].seq > e.seq))) i--;
      queue.splice(i, 0, e);
    };
    const remove = (e) => {
      const i = queue.indexOf(e);
      if (i >= 0) queue.splice(i, 1);
    };
    const arm = () => {
      if (wake !== null) realClearTimeout(wake);
      wake = null;
      if (queue.length === 0) return;
      wake = realSetTimeout(fire, Math.max(0, queue[0].at - realNow()));
      if (!queue.some((e) => e.ref)) wake.unref();
    };
    function fire() {
      wake = null;
      const e = queue[0];
      if (e === undefined || e.at > realNow()) return arm();
      queue.shift();
      if (e.due > elapsed) elapsed = e.due; // the clock moves only here
      if (e.interval > 0) {
        e.due += e.interval;
        e.at = realNow() + e.interval;
        e.seq = ++seq;
        insert(e);
      } else {
        byId.delete(e.id);
      }
      arm(); // before the callback, which may throw or set timers
      e.fn.apply(e.timeout, e.args);
    }
    class Timeout {
      #e;
      constructor(e) { this.#e = e; }
      ref() { this.#e.ref = true; arm(); return this; }
      unref() { this.#e.ref = false; arm(); return this; }
      hasRef() { return this.#e.ref; }
      refresh() {
        const e = this.#e;
        if (byId.has(e.id)) {
          remove(e);
          e.due = elapsed + e.delay;
          e.at = realNow() + e.delay;
          e.seq = ++seq;
          insert(e);
          arm();
        }
        return this;
      }
      close() { clear(this); return this; }
      [Symbol.toPrimitive]() { return this.#e.id; }
    }
    const schedule = (fn, delay, args, repeat) => {
      if (typeof fn !== 'function') return realSetTimeout(fn, delay); // Node's TypeError
      const d = delayOf(delay);
      const e = { id: nextId++, fn, args, delay: d, interval: repeat ? d : 0, due: elapsed + d, at: realNow() + d, seq: ++seq, ref: true };
      e.timeout = new Timeout(e);
      byId.set(e.id, e);
      insert(e);
      arm();
      return e.timeout;
    };
    function clear(t) {
      if (t === null || t === undefined) return;
      const e = byId.get(typeof t === 'object' ? Number(t[Symbol.toPrimitive] ? t[Symbol.toPrimitive]() : NaN) : Number(t));
      if (e === undefined) return realClearTimeout(t);
      byId.delete(e.id);
      remove(e);
      arm();
    }
    const util = require('node:util');
    globalThis.setTimeout = function setTimeout(fn, delay, ...args) { return schedule(fn, delay, args, false); };
    globalThis.setTimeout[util.promisify.custom] = (delay, value) => new Promise((resolve) => schedule(resolve, delay, [value], false));
    globalThis.setInterval = function setInterval(fn, delay, ...args) { return schedule(fn, delay, args, true); };
    globalThis.clearTimeout = function clearTimeout(t) { clear(t); };
    globalThis.clearInterval = function clearInterval(t) { clear(t); };
  }

  // k8s and kc are always there, as in the reference, whatever the
  // allow-list says; they are loaded on first use (client-node takes most
  // of a second to load).
  const loadK8s = () => bundleRequire('@kubernetes/client-node');
  lazyGlobal('k8s', loadK8s);
  lazyGlobal('kc', () => {
    const k8s = loadK8s();
    const kc = new k8s.KubeConfig();
    if (cfg.kubeconfig) {
      kc.loadFromFile(cfg.kubeconfig);
    } else if (cfg.kubeServer) {
      // kubeServer is the worker's plain-HTTP loopback proxy inside the
      // sandbox: there is no TLS to verify (client-node refuses http://
      // unless skipTLSVerify is set). The supervisor verifies the real
      // API server's certificate.
      kc.loadFromClusterAndUser({ name: 'execfarm', server: cfg.kubeServer, skipTLSVerify: true }, { name: 'sandbox' });
    }
    return kc;
  });

  // The Prometheus endpoint inside the sandbox (a loopback proxy of the
  // supervisor's PROMETHEUS_URL), for prometheus-query's PrometheusDriver.
  if (cfg.prometheusUrl) {
    Object.defineProperty(globalThis, 'PROMETHEUS_URL', { value: cfg.prometheusUrl, writable: false, configurable: false, enumerable: false });
  }

  // Test mode (ExecuteTest): the shared harness (testresult.Harness) with a
  // host that writes results as JSON lines to fd 4, apart from the
  // program's output, following package testresult's rules, each line
  // starting with the run's nonce (the first line of fd 3, which the code
  // never sees). The tests get the harness' test and assert as bindings of
  // their own; the code gets a test that refuses and the same frozen
  // assert; then the intrinsics are frozen (testresult.Lockdown).
  let harness = null, host = null, lockdown = null;
  if (cfg.harness) {
    host = testHost(4);
    const vm = require('node:vm');
    const build = vm.runInThisContext(cfg.harness, { filename: 'harness.js' });
    lockdown = vm.runInThisContext(cfg.lockdown, { filename: 'lockdown.js' });
    const assert = bundleRequire('uvu/assert');
    harness = build(host, assert, sandboxRequire);
    const codeTest = harness.codeTest;
    Object.defineProperty(globalThis, 'test', { value: codeTest, writable: false, configurable: false, enumerable: false });
    Object.defineProperty(globalThis, 'assert', { value: assert, writable: false, configurable: false, enumerable: false });
    const inner = sandboxRequire;
    const uvu = Object.freeze({ test: codeTest });
    sandboxRequire = function (name) {
      if (name === 'uvu') return uvu;
      if (name === 'uvu/assert') return assert;
      return inner(name);
    };
    const exiting = host.exiting;
    process.on('exit', (code) => exiting(code));
    lockdown = lockdown.bind(null, assert, harness.test, codeTest);
  }

  // Ways back to the real require, native code or files. node -e also
  // defines require, module, exports, __filename and __dirname as globals.
  const hide = (obj, name) => {
    try {
      Object.defineProperty(obj, name, { value: undefined, writable: false, configurable: false, enumerable: false });
    } catch {
      // Not configurable: nothing we can do from here.
    }
  };
  // node -e defines these globals and, after this script, assigns
  // globalThis.module again (node 20: to the Module class, a way back to
  // the real loader), so they become accessors that ignore assignments.
  for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) {
    Object.defineProperty(globalThis, name, {
      get: () => undefined, set: () => {}, configurable: false, enumerable: false,
    });
  }
  for (const name of [
    'binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'mainModule', 'report',
    'loadEnvFile', 'moduleLoadList', '_debugProcess', '_debugEnd', '_startProfilerIdleNotifier',
    '_stopProfilerIdleNotifier', '_tickCallback', 'setSourceMapsEnabled', 'execve',
  ]) hide(process, name);

  let program;
  try {
    program = fs.readFileSync(3, 'utf8');
    fs.closeSync(3);
  } catch (e) {
    process.stderr.write(`execfarm: no program on fd 3: ${e.message}\n`);
    process.exit(70);
  }
  if (harness) {
    // The payload: the nonce's line, then the program (testresult).
    const nl = program.indexOf('\n');
    const nonce = nl === 32 ? program.slice(0, nl) : '';
    if (!/^[0-9a-f]{32}$/.test(nonce)) {
      process.stderr.write('execfarm: test-mode program without its nonce line\n');
      process.exit(70);
    }
    host.sign(nonce);
    program = program.slice(nl + 1);
    lockdown();
  }

  const userModule = { id: '.', filename: mainFile, loaded: false, exports: {} };
  const m = new Module(mainFile, null);
  m.filename = mainFile;
  m.paths = [];
  m.exports = { require: sandboxRequire, module: userModule };
  // _compile applies --enable-source-maps to the program's inline map;
  // node.Prefix swaps in the sandbox require and returns a promise that an
  // unhandled rejection turns into exit code 1 with the stack on stderr.
  const done = m._compile(program, mainFile);
  m.exports = userModule.exports;
  if (harness) {
    // The tests run once the top level (top-level await included) is done.
    harness.start(done);
    return;
  }
  // A top level that never settles (an await on a promise nothing will
  // settle) is not a success: as node's own ES module loader does, say so
  // and exit 13 once nothing is left to run. beforeExit comes only when
  // the loop empties, never after process.exit.
  // (finally passes a rejection on: it stays unhandled, exit code 1.)
  let settled = false;
  Promise.resolve(done).finally(() => {
    settled = true;
  }).then(() => {
    userModule.loaded = true;
  });
  process.on('beforeExit', () => {
    if (!settled) {
      process.stderr.write('Warning: Detected unsettled top-level await\n');
      process.exitCode = exitUnsettled;
    }
  });

  // testHost reports the harness' events as JSON lines on fd, each
  // starting with the nonce given to sign, with the error rule of package
  // testresult: an uvu Assertion's message plus its details when they are
  // at most 2048 bytes, an Error's "name: message", a string itself,
  // anything else inspected. What it calls is captured here, before the
  // code runs; its records have no prototype, so nothing inherited
  // (toJSON) takes part in their encoding.
  function testHost(fd) {
    const inspect = require('node:util').inspect;
    const writeSync = fs.writeSync, stringify = JSON.stringify, now = Date.now;
    const byteLength = Buffer.byteLength;
    const detailsMax = 2048;
    let prefix = null;
    let names = [], runs = [], next = 0, running = -1, began = 0, finished = false, planned = false;
    const sum = { __proto__: null, total: 0, passed: 0, failed: 0, skipped: 0 };
    const write = (o) => {
      if (prefix === null) return;
      try { writeSync(fd, prefix + stringify(o) + '\n'); } catch {}
    };
    const str = (v) => (typeof v === 'string' ? v : '');
    const errorText = (v) => {
      try {
        if (v === undefined) return 'undefined';
        if (typeof v === 'string') return v;
        if (!(v instanceof Error) && !(v && typeof v === 'object' && typeof v.message === 'string' && typeof v.name === 'string')) {
          return inspect(v);
        }
        const name = str(v.name), message = str(v.message);
        if (name === 'Assertion') {
          const d = v.details;
          const details = typeof d === 'string' ? d.replace(/\n+$/, '') : '';
          return details && byteLength(details) <= detailsMax ? message + '\n' + details : message;
        }
        if (!message) return name;
        if (!name) return message;
        return name + ': ' + message;
      } catch {
        return '(a value whose description threw)';
      }
    };
    const record = (fields) => Object.assign(Object.create(null), fields);
    // Lines stay far below the reader's 64 KiB (testresult.MaxLineBytes):
    // names and errors are cut to their caps in UTF-16 units, which the
    // reader cuts again to bytes.
    const cap = (s, n) => (s.length > n ? s.slice(0, n) : s);
    const report = (i, r) => {
      if (finished || i < next) return;
      r.name = cap(names[i], 1024);
      if (typeof r.error === 'string') r.error = cap(r.error, 8192);
      if (r.skipped) sum.skipped++;
      else if (r.passed) sum.passed++;
      else sum.failed++;
      write(r);
      next = i + 1;
      running = -1;
    };
    const summary = (error) => {
      if (finished) return;
      finished = true;
      const line = record({ summary: record({ total: sum.total, passed: sum.passed, failed: sum.failed, skipped: sum.skipped }) });
      if (error) line.error = cap(error, 8192);
      write(line);
      process.exitCode = !error && sum.failed === 0 ? 0 : 1;
    };
    const abort = (reason) => {
      if (finished) return;
      for (let i = next; i < names.length; i++) {
        if (!runs[i]) report(i, record({ skipped: true }));
        else if (i === running) report(i, record({ error: reason, duration_ms: now() - began }));
        else report(i, record({ error: 'not run: ' + reason }));
      }
      summary(reason);
    };
    const index = (i) => {
      if (!Number.isInteger(i) || i < 0 || i >= names.length) throw new TypeError('test harness: bad test index');
      return i;
    };
    return {
      __proto__: null,
      sign(nonce) { if (prefix === null) prefix = nonce + ' '; },
      topLevelFailed(e) { abort(errorText(e)); },
      none() { summary('no tests defined'); },
      plan(n) {
        if (planned) throw new TypeError('test harness: bad plan');
        planned = true;
        names = new Array(n).fill('');
        runs = new Array(n).fill(false);
        sum.total = n;
      },
      declare(i, name, r) { i = index(i); names[i] = String(name); runs[i] = r === true; },
      phase() {},
      start(i) { running = index(i); began = now(); },
      pass(i) { report(index(i), record({ passed: true, duration_ms: now() - began })); },
      fail(i, e) { report(index(i), record({ error: errorText(e), duration_ms: now() - began })); },
      skip(i) { report(index(i), record({ skipped: true })); },
      hookFailed(p, e) { abort(p + ' hook failed: ' + errorText(e)); },
      done() { summary(''); },
      crashed(e) { abort('test harness failed: ' + errorText(e)); },
      exiting(code) {
        if (finished) return;
        abort(`process exited (code ${code}) before the tests finished`);
      },
    };
  }
})();
