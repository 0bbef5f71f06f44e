// Package jsconsole is the console channel of the JavaScript runtimes
// (goja, node): each console line a program writes, with its level, in the
// order written, on a file descriptor of its own (FD), apart from the
// program's raw stdout and stderr. Two pipes lose the order between
// stdout and stderr; this channel keeps it, so that the supervisor can
// fill ProDisco's fields as ProDisco's executor does: `output` is the
// console lines joined by "\n", console.error lines prefixed "[ERROR] ",
// console.warn "[WARN] ", console.info "[INFO] "; `error` is the message
// of the error that ended the program. The raw streams are unchanged by
// it (console.error still writes its text, unprefixed, to stderr).
//
// A record is one line: a Kind byte, then the text as a JSON string, then
// "\n" (a JSON string holds no raw newline, so "\n" always ends a record):
//
//	L"listing pods"
//	W"3 pods pending"
//	E"cannot reach the API server"
//	X"connect ECONNREFUSED 127.0.0.1:8001"
//
// The channel is the program's own (node code can write to the
// descriptor): it can only shape its own ProDisco fields. Bounds follow
// ProDisco's executor: a program's lines are kept up to MaxLines lines
// and MaxChars characters (UTF-16 code units, as JavaScript counts
// String.length, prefixes included); the line that would pass either cap
// and every line after it are dropped (Truncated). Writers apply the same
// rule (Counter) to spare the pipe; Parser applies it whatever it is sent,
// and holds at most MaxRecordBytes of an unfinished record. It has no
// dependency on a JavaScript engine: the supervisor, the worker and the
// goja runtime import it.
package jsconsole
