// Package scheduler admits executions: at most MaxConcurrent hold a slot at
// once, the others wait in one FIFO queue of at most QueueSize entries with
// visible positions (1 = next). A slot is granted with the memory limit of
// the execution's sandbox taken from the node's memory budget (package
// budget, shared with the session sandboxes): the queue's head waits until
// both a slot and its memory are free, and no later ticket passes it;
// its memory is kept for it meanwhile (budget.Reserve): a session create
// fits only in what is free beyond it, so creates cannot starve it. A
// full queue is refused at once (*FullError wrapping ErrQueueFull,
// RESOURCE_EXHAUSTED on the wire, naming what the queue waits for: a
// slot, or its head's memory); with no queue (QueueSize 0), a ticket
// that finds a slot free but its memory short is refused with the
// budget's *budget.Error (budget.ErrExhausted), and so, always, is a
// ticket whose memory alone is over the whole budget
// (budget.ErrTooLarge). A waiter whose context ends leaves the queue and
// frees its place. Every path that runs code (Execute, ExecuteStream,
// ExecuteAsync, ExecuteTest) goes through it.
package scheduler
