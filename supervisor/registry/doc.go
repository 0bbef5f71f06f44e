// Package registry keeps every execution the supervisor knows about: its state
// machine, its separately buffered stdout and stderr, its result, its
// listeners, and the retention rules that decide when it is forgotten.
//
// The rules it enforces come from the "Execution semantics" section of
// DESIGN.md: states go PENDING → RUNNING → one terminal state and terminal
// states never change; each output stream is bounded per execution (head and
// tail kept, the middle dropped and counted); offsets are logical byte counts
// per stream that never split a UTF-8 sequence in what is returned; listings
// are sorted newest first before the limit is applied; terminal executions are
// kept for a retention time and a count; their output and attachments (a
// test run's results) share a budget of buffered bytes, enforced by
// dropping the oldest attachments of the account keeping the most while
// they hold more than half of it, then by cutting the largest streams to
// an equal share (never by removing an execution, so one execution's
// output never evicts another's result).
//
// Everything here is safe for concurrent use. Writers never block on readers:
// subscribers read the execution's buffers by offset and are woken by a
// notification, so a slow subscriber costs no memory and sees a gap when the
// bytes it missed were dropped. The package is pure Go and knows nothing of
// gRPC; conversion to the wire types lives with the service.
package registry
