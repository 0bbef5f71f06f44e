package testresult

import _ "embed"

// Harness is the JavaScript test harness of test mode (harness.js): an
// expression whose value is a function of a host object returning
// { test, start }. The goja and node runtimes both evaluate it, each with
// its own host, so that a test file gives the same results in both.
//
//go:embed harness.js
var Harness string
