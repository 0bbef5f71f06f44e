// Package bench holds execfarm's benchmarks: Execute latency (p50/p99 of
// goja console.log(1) and shell true), throughput (executions per second
// with 8 clients) and memory (supervisor RSS idle and with 1000 queued
// executions, RSS of one sandbox's worker), each per warm-pool size, and
// sandbox start-up phase by phase (BenchmarkSandboxStart). Each
// prints its numbers next to baselines measured in the same run — a bare
// fork+exec+wait from Go of the worker binary and of /bin/true, and
// bubblewrap (`bwrap --unshare-all`) running /bin/true — as ratios, because
// absolute times on a shared machine mean little.
//
// BenchmarkVersusBwrap prints the table the speed targets are read from:
// bwrap interleaved with execfarm in ABAB rounds, for no pool, a warm
// pool with a back-to-back client and refilled between requests, and a
// reused pool, shell and goja: p50, p99, throughput with 8 clients, CPU
// per execution (host-wide, and the benchmark's own processes) and each
// ratio to bwrap. Its "floor" row runs a go-plugin gRPC plugin
// (testdata/pluginfloor: go-plugin, gRPC and the worker's protocol, no
// isolation) that exits after its packages' init: what any worker costs
// before it does anything, since the design runs one go-plugin plugin per
// sandbox. From it and bwrap's own CPU (the namespaces, mounts and exec
// every fresh sandbox needs too) the table prints the least CPU of a fresh
// sandbox and the least mean latency of a back-to-back client, both as
// ratios to bwrap. Then the PSS and idle CPU of a warm sandbox. The
// host-wide CPU subtracts the host's background use measured just before
// each run, which holds only on an otherwise idle host; the own-CPU column
// (one cpuacct group holding the benchmark and every sandbox) holds on a
// busy one too.
// EXECFARM_BENCH_ROUNDS and EXECFARM_BENCH_SECONDS shorten or lengthen it;
// EXECFARM_BENCH_SETUPS=pool0,pool4,reuse picks its series.
// Run with `make bench` (root, Linux, Debian's bubblewrap, which the
// target installs).
package bench
