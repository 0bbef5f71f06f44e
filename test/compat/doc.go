// Package compat checks that an unmodified ProDisco client works against
// execfarm: a Node.js client built with @grpc/grpc-js and
// @grpc/proto-loader loads ProDisco's proto as published
// (prodisco_sandbox.proto, with no execfarm fields) and runs
// Execute, ExecuteStream, ExecuteAsync+GetExecution and HealthCheck against
// a real supervisor over its unix socket.
//
// The package holds only tests. They need node on $PATH and the pinned npm
// dependencies installed (`npm ci --prefix test/compat`); a missing
// node_modules fails the tests rather than skipping them. The end-to-end
// test needs root (sandboxes use namespaces and cgroups) and skips without
// it.
package compat
