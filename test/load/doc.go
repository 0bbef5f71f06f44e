// Package load holds execfarm's load tests: a supervisor run as a separate
// `execfarm serve` process (so that its RSS can be read from /proc) takes a
// thousand queued executions and must lose none, return every output byte
// for byte and stay small; many concurrent clients must never share a
// sandbox; under every memory attack at once (proxy lists, large outputs,
// parallel reads, queued requests, unauthenticated connections) the
// supervisor stays under its documented RSS bound while another client's
// executions run; and session sandboxes move 100 MiB through
// SessionService with the supervisor's RSS growing less than 32 MiB, list
// a directory of 20 000 files within max_entries, and 20 of them run 10
// upload/exec/download flows each at once, losing nothing and leaving
// nothing once deleted. They need root and Linux, and skip otherwise.
package load
