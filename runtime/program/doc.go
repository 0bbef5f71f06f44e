// Package program maps a runtime name and the caller's code to the
// RunRequest the worker executes inside the sandbox: argv, environment,
// working directory and, for goja, the transformed program on fd 3. It
// runs in the supervisor, so a syntax error is answered before a sandbox
// is spent.
package program
