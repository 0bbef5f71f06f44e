// Package transformer runs the TypeScript/JavaScript transforms — package
// transform's for goja, node.Transform's for node — in helper processes,
// so that code which breaks esbuild cannot break the supervisor.
//
// esbuild's parser is recursive and has no depth limit: about 4.6 KiB of
// Go stack per nesting level, so 220 000 levels (440 KB of parentheses, or
// of `!`, `a=a=`, else-if chains) pass Go's 1 GB stack limit, and Go ends
// the whole process on a stack overflow; no recover catches it. Lowering
// can also blow code up 30 times (`using`, enums), so one 4 MB request
// held ~300 MB while it was transformed. In a helper the same code ends
// only the helper, whose stack (MaxStack), memory (MemoryLimit, as
// RLIMIT_DATA) and CPU time (CPUTimeBase plus CPUTimePerKiB a KiB of
// code, MaxCPUTime at most) are bounded, and the request is refused with
// a *LimitError naming the bound.
//
// The time bound is CPU time, which the helper reads itself and ends
// itself past (exitCPU): on a loaded host a helper waits for a CPU, and
// wall-clock time would blame the code for the host's load. Wall-clock
// time is only a backstop, Timeout per transform: a helper starved of CPU
// (or stuck) is killed there and the request is ErrStarved, retryable,
// never a *LimitError. A helper whose supervisor died ends itself
// watchdogSlack past Timeout, never before the supervisor's backstop.
//
// # Helpers
//
// A helper is the running binary itself (/proc/self/exe) started with
// EXECFARM_TRANSFORM_HELPER set (Env: its value carries the bounds): this package's init serves transforms on
// standard input and output and exits, before main (or a test binary's
// testing.Main) runs. Any binary that links the package can therefore
// transform. At most Helpers transform at once, PerOwner of them for one
// owner (WithOwner), and MaxQueuedBytes of code waits (callers wait for
// a helper, or for their context); an idle helper stays for the next request, so a
// transform costs a round trip over two pipes beside esbuild's own work
// (~0.1 ms, against ~10 ms to start a helper). A helper that failed a
// request is killed, never reused. Helpers read their requests from a
// pipe only the supervisor holds: when the supervisor dies they read end
// of file and exit.
//
// # Cache
//
// Successful transforms of small code are cached in the supervisor (an LRU
// of cacheEntries): agents run the same script again and again, and a hit
// costs no helper at all.
package transformer
