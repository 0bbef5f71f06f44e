// Package proto holds the .proto sources of execfarm's APIs and the
// generated Go in its sub-packages (sandboxv1, execfarmv1, workerv1). Regenerate with
// `make proto`; CI fails when the checked-in code drifts.
package proto
