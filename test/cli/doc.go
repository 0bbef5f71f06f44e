// Package cli tests the execfarm command line as a user meets it: the
// binary built, one `execfarm serve` (JSON logs) started, and the client
// commands run against it as processes, checking their output formats
// (-o json, yaml), limit flags with units, every documented exit status,
// the hints when no supervisor answers, version, and serve's log. Needs
// root (sandboxes).
package cli
