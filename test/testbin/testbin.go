// Package testbin builds the execfarm binaries for the suites that start
// supervisors (integration, hostile, compat, load, bench). Test support, not
// product code. It must not import proto/sandboxv1: test/compat/prodisco
// links ProDisco's own generated proto, under the same names.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Sandbox are the binaries every sandbox needs, built side by side: the
// worker and the goja runtime, found next to it
// (supervisor/sandbox.GojaBinaryName).
var Sandbox = []string{"execfarm-worker", "execfarm-goja"}

// PrebuiltEnv names a directory of binaries built beforehand, which
// Build links into place instead of building: make test-cgroup2 sets it
// in its VM, which has neither the module cache nor the network that
// `go build` needs.
const PrebuiltEnv = "EXECFARM_TEST_PREBUILT"

// Build builds the commands names (cmd/NAME) into dir and opens dir and
// the binaries to mode 0755: a sandbox's unprivileged root executes them.
// With PrebuiltEnv set it links the binaries of that directory instead;
// one missing there is an error.
func Build(dir string, names ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if pre := os.Getenv(PrebuiltEnv); pre != "" {
		for _, n := range names {
			src := filepath.Join(pre, n)
			if _, err := os.Stat(src); err != nil {
				return fmt.Errorf("prebuilt %s ($%s): %w", n, PrebuiltEnv, err)
			}
			if err := os.Symlink(src, filepath.Join(dir, n)); err != nil {
				return err
			}
		}
		return nil
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "github.com/execfarm/execfarm/cmd/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", names, err, out)
	}
	for _, n := range names {
		if err := os.Chmod(filepath.Join(dir, n), 0o755); err != nil {
			return err
		}
	}
	return nil
}
