// Package capability restricts the Linux capabilities of the whole calling
// process, on every OS thread at once, and reads capability sets back from
// /proc. The worker calls Restrict once after it has built the sandbox, so
// that it keeps only what it needs to start runtime processes as the
// sandbox user (CAP_SETUID, CAP_SETGID) and to signal them (CAP_KILL).
//
// Capability sets, the bounding set included, belong to a thread, not to a
// process (capabilities(7)), and a child inherits those of the thread that
// forked it. A Go program has many threads and moves goroutines between
// them, so dropping capabilities on one thread leaves the others, and every
// process they fork, with the full set. Restrict therefore runs each
// prctl(2) and capset(2) on every thread through libcap's psx package,
// which is syscall.AllThreadsSyscall in pure-Go builds and libpsx (which
// also covers threads started from C) in cgo builds; threads created later
// inherit the restricted sets from their creator. Linux only; elsewhere
// Restrict returns an error wrapping ErrNotSupported.
package capability
