// Package load holds execfarm's load tests: a supervisor run as a separate
// `execfarm serve` process (so that its RSS can be read from /proc) takes a
// thousand queued executions and must lose none, return every output byte
// for byte and stay small; and many concurrent clients must never share a
// sandbox; and under every memory attack at once (proxy lists, large
// outputs, parallel reads, queued requests, unauthenticated connections)
// the supervisor stays under its documented RSS bound while another
// client's executions run. They need root and Linux, and skip otherwise.
package load
