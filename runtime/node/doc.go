// Package node is the "node" runtime: it turns user TypeScript into a
// program for the host's node (Transform, run in the supervisor) and gives
// the command line that runs it inside the sandbox behind a prelude (Argv).
//
// Pieces and who provides them:
//
//   - The runtime bundle, bundle/node_modules (@kubernetes/client-node,
//     prometheus-query, uvu at the versions pinned in bundle/package.json and
//     bundle/package-lock.json), installed with
//     `npm ci --prefix runtime/node/bundle --ignore-scripts --no-audit --no-fund`.
//     The supervisor finds it with FindBundle and binds it read-only at
//     SandboxDir in the sandbox.
//   - The prelude (prelude.js, embedded) runs first, via node -e: it reads
//     its configuration from its one argument, empties process.env, defines
//     the globals k8s (the client-node module) and kc (a KubeConfig, empty
//     or pointing at Config.KubeServer / Config.KubeconfigPath), hides
//     node's own require, reads the program from fd 3 and runs it with a
//     require that admits only allow-listed packages and their subpaths,
//     loaded from the bundle; anything else, Node built-ins included, throws
//     Error("Module '<name>' not available in sandbox") with code
//     MODULE_NOT_FOUND. The default allow-list is the reference server's;
//     SANDBOX_ALLOWED_MODULES (ParseAllowedModules) overrides it; uvu is
//     always allowed (test mode).
//   - The prelude also installs the console: node's own Console over the
//     real stdout and stderr, with console.warn on stdout as in goja and
//     ProDisco; with Config.Console it writes the console channel on
//     runtime/jsconsole.FD (each line with its level, in order, within
//     ProDisco's caps, and the message of an uncaught error).
//   - The program is Transform's output; the worker passes it on fd 3.
//
// Rules a caller must keep: start node with an empty environment (node
// reads NODE_OPTIONS before the prelude runs) and without RLIMIT_AS (V8
// reserves large virtual regions). The node binary needs /dev/urandom and
// /proc/self; libuv falls back when seccomp answers io_uring with ENOSYS.
//
// The prelude is not the security boundary: the OS sandbox is, and node's
// permission model (Argv enables it) is a second layer that refuses child
// processes, workers, addons, process.binding and file access outside the
// bundle even if code reaches node's own loader. Residual ways around the
// prelude: an allowed package may itself hand out Node built-ins it holds;
// and the user's code runs in node's main realm, so it can change shared
// globals and prototypes that allowed packages use.
package node
