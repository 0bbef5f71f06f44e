// Package runtime holds the runtimes that turn a request into a running
// program: goja (the JS engine in Go, run by the worker binary inside the
// sandbox), shell (/bin/sh -c), python (python3 -u -c) and, later, node; the
// TypeScript transform (transform) that runs in the supervisor; and
// program, which maps a runtime and code to the worker's RunRequest.
package runtime
