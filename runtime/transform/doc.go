// Package transform turns user TypeScript or JavaScript into plain
// JavaScript that the goja runtime can execute, using esbuild's Go API.
//
// The supervisor runs it through package runtime/transformer, in a helper
// process (esbuild's parser has no depth limit, and a Go stack overflow
// ends the process), before a sandbox is spent: syntax errors are
// returned as a *SyntaxError so the caller can answer INVALID_ARGUMENT. The output keeps top-level await (the goja
// runner wraps the program in an async function) and carries an inline
// source map, so runtime stack traces name the user's own lines and
// columns. The goja runner resolves no modules and runs a program as one
// script, so a program with import or export statements is transformed
// as an IIFE instead of an ES module: exports are dropped and imports
// become require calls; beside top-level await (which only an ES module
// keeps) they are a *SyntaxError.
package transform
