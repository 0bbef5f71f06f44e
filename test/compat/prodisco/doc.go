// Package prodisco checks that a ProDisco client sees what ProDisco
// gives it: a Go client generated from ProDisco's proto as published
// (../prodisco_sandbox.proto, package prodiscopb: no execfarm extension)
// drives `execfarm serve` processes, one whose default runtime is goja and
// one node, and checks the ProDisco fields as ProDisco's executor fills
// them. It links no execfarm package with the same proto names
// (proto/sandboxv1): the server is a separate process, as for a real
// ProDisco client. Needs root (sandboxes), node and the runtime bundle.
package prodisco
