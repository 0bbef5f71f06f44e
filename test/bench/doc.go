// Package bench holds execfarm's benchmarks: Execute latency (p50/p99 of
// goja console.log(1) and shell true), throughput (executions per second
// with 8 clients) and memory (supervisor RSS idle and with 1000 queued
// executions, RSS of one sandbox's worker), each per warm-pool size, and
// sandbox start-up phase by phase (BenchmarkSandboxStart). Each
// prints its numbers next to baselines measured in the same run — a bare
// fork+exec+wait from Go of the worker binary and of /bin/true, and
// bubblewrap (`bwrap --unshare-all`) running /bin/true — as ratios, because
// absolute times on a shared machine mean little. Run with `make bench`
// (root, Linux; the bwrap rows need Debian's bubblewrap package).
package bench
