// Package scheduler admits executions: at most MaxConcurrent hold a slot at
// once, the others wait in one FIFO queue of at most QueueSize entries with
// visible positions (1 = next). A full queue is refused at once
// (ErrQueueFull, RESOURCE_EXHAUSTED on the wire); a waiter whose context
// ends leaves the queue and frees its place. Every path that runs code
// (Execute, ExecuteStream, ExecuteAsync, ExecuteTest) goes through it.
package scheduler
