//go:build race

package sandbox

// raceBuild: the tests' workers are this test binary (Config.WorkerBinary
// is os.Executable), so in a -race build they carry the race detector's
// shadow memory, several times their own, charged to the sandbox.
const raceBuild = true
