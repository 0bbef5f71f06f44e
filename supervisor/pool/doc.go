// Package pool keeps a warm pool of sandboxes started ahead of demand, so
// that an execution does not pay the sandbox start-up (fork, namespaces,
// mounts, cgroup, worker handshake) on its latency path.
//
// Every warm sandbox is started with one Spec (the server's default
// limits); Take hands a ready one only to a request with exactly that Spec,
// and never to two callers (a ready sandbox is in a channel: one receive,
// one owner). Sandboxes are single-use by default: the taker destroys it
// (Discard), and the pool starts a replacement in the background, up to
// one start per CPU at once, at a low CPU weight so that refilling yields
// to running executions. With reuse K > 1 a sandbox serves up to K
// executions: the taker resets it and gives it back (Recycle), and the
// pool prepares it again. Close stops the refill and destroys the
// sandboxes still ready.
package pool
