// Package testresult is the format in which a runtime reports the outcome of
// test mode (ExecuteTest) to the worker: JSON Lines on a channel of their own
// (a separate file descriptor), never mixed with the program's stdout or
// stderr, so that no amount of user output can hide or forge them. It has no
// dependency on any JavaScript engine so that the worker and the supervisor
// can import it cheaply.
//
// In test mode the runtime reads its program on fd 3 as a payload
// (EncodePayload): a per-run nonce on the first line, then the code under
// test and the tests assembled for the harness (Assemble); the runtime
// builds the harness (Harness) and freezes the intrinsics (Lockdown)
// before the code runs. Every line it writes starts with the nonce and a
// space; the reader keeps only such lines (Authenticate), so that the code
// under test, which can write on the channel too, cannot forge one.
//
// A runtime writes one line per test, in registration order, as each test
// ends:
//
//	{"name":"adds","passed":true,"duration_ms":1}
//	{"name":"fails","passed":false,"error":"Expected values to be deeply equal:\n...","duration_ms":0}
//	{"name":"later","skipped":true}
//
// and, once every test and hook has run, one final line:
//
//	{"summary":{"total":3,"passed":1,"failed":1,"skipped":1}}
//	{"summary":{"total":0,"passed":0,"failed":0,"skipped":0},"error":"no tests defined"}
//
// Total counts every registered test, skipped ones included, so
// total = passed + failed + skipped. The error of a summary line is a
// failure outside any single test: "no tests defined"; a throw in the
// program's top level (no result lines then, all counts zero); a throwing
// hook ("before hook failed: <error>", "after hook failed: <error>"); an
// uncaught exception, process.exit, a timeout, or a test that never
// settles. When the run ends early that way, the running test fails with
// the same error, and every later test that was to run fails with
// "not run: <error>". A reader that finds no summary line (the runtime was
// killed) gets a Summary with Complete false, counted from the result lines
// it did read.
//
// The error of a failed test follows uvu's runner: for an uvu Assertion
// (name "Assertion") it is the assertion's message, followed by a newline
// and its details (uvu's diff, without colours, trailing newlines removed)
// when the details are at most DetailsMaxBytes long; for any other Error it
// is "<name>: <message>"; for a thrown string the string; for other values
// their util.inspect form. Writers cap names and errors (MaxNameBytes,
// MaxErrorBytes) and stop writing result lines after MaxResults; the
// summary still counts every test.
package testresult

// FD is the file descriptor on which a runtime process in test mode writes
// its results (the worker's RunRequest.results pipe).
const FD = 4

// GojaArg is the argument that starts the goja runtime binary
// (execfarm-goja) in test mode.
const GojaArg = "--test"
