// Package pool keeps a warm pool of sandboxes started ahead of demand, so
// that an execution does not pay the sandbox start-up (fork, namespaces,
// mounts, cgroup, worker handshake) on its latency path.
//
// Every warm sandbox is started with one Spec (the server's default
// limits); Take hands a ready one only to a request with exactly that Spec,
// and never to two callers (a ready sandbox is in a channel: one receive,
// one owner). Sandboxes are single-use: the taker destroys it, and the pool
// starts a replacement in the background, one at a time so that refilling
// never competes with running executions for more than one core. Close
// stops the refill and destroys the sandboxes still ready.
package pool
