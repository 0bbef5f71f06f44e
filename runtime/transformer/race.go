//go:build race

package transformer

// raceBuild: the race detector's shadow memory sits in private writable
// mappings, which RLIMIT_DATA counts (a helper of a -race test binary
// could not map its first 128 MiB of it), so such a helper runs without
// the memory bound. Only tests are built so.
const raceBuild = true
