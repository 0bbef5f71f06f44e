// Package bench holds execfarm's benchmarks. Each prints its numbers next
// to a baseline measured in the same run (a bare fork+exec+wait from Go of
// the worker binary and of /bin/true), as ratios, because absolute times
// on a shared machine mean little. Run with `make bench` (root, Linux).
package bench
