// Package budget is the node's memory budget: the sum of the memory
// limits of the live sandboxes that clients can fill is held within one
// total (--memory-budget), so that no set of requests the server admits
// can drive the host into its global OOM killer. Files in a sandbox's
// tmpfs mounts belong to no process, so no OOM kill frees them: only
// admission can keep their sum below the host's memory.
//
// One Budget is shared by the session manager, which takes a session
// sandbox's limit for its life and is refused at once when it does not
// fit (TryAcquire), and the scheduler, whose FIFO grant of a slot to a
// single-use execution also takes its limit and waits for it (OnRelease
// wakes the scheduler when memory comes back). While executions wait,
// the memory limit of the queue's head is kept for it (Reserve): a
// session create fits only in what is free beyond it, so a stream of
// creates cannot keep the head waiting for ever; the head takes it with
// TryAcquireReserved. A nil *Budget admits everything.
package budget
