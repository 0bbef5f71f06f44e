// Package goja runs a JavaScript program in the goja engine with a Node-like
// event loop; it is the "goja" runtime that the worker starts, as an
// unprivileged process inside the sandbox: the binary cmd/execfarm-goja,
// whose whole program is Main.
//
// The program is the output of package runtime/transform: plain JavaScript
// that may use top-level await and may end with an inline source map. Run
// wraps it in an async function on its first line, so stack traces keep the
// user's line numbers, and provides console, timers (setTimeout,
// setInterval, setImmediate and their clear functions, queueMicrotask), a
// minimal process object (exit, env, argv, platform, stdout.write,
// stderr.write) and a require that refuses every module. With
// Options.Console it also writes the console channel (runtime/jsconsole):
// each console line with its level, in order, and the message of the
// error that ended the program. The rule a caller must keep: one Run per
// process is the intended use; Run owns its goja runtime and never reuses
// it.
package goja
