package compat

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// nodeTimeout bounds one run of client.mjs; its own calls have 30 s
// deadlines each.
const nodeTimeout = 2 * time.Minute

// requireNode fails the test when node or the pinned npm dependencies are
// missing. CI installs them before `go test`; skipping here would hide a
// broken CI set-up.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on $PATH (Node.js >= 20 is required): %v", err)
	}
	for _, dep := range []string{"@grpc/grpc-js", "@grpc/proto-loader"} {
		if _, err := os.Stat(filepath.Join("node_modules", dep, "package.json")); err != nil {
			t.Fatalf("test/compat/node_modules/%s is missing: run `npm ci` in test/compat (from the repository root: `npm ci --prefix test/compat`): %v", dep, err)
		}
	}
	return node
}

// runNode runs `node client.mjs args...` in this directory and returns
// its standard output. A non-zero exit fails the test with the client's
// standard error, which names the failing step.
func runNode(t *testing.T, args ...string) []byte {
	t.Helper()
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("node client.mjs %v: no answer within %v\nstderr:\n%s", args, nodeTimeout, stderr.String())
	}
	if err != nil {
		t.Fatalf("node client.mjs %v: %v\nstderr:\n%s\nstdout:\n%s", args, err, stderr.String(), stdout.String())
	}
	return stdout.Bytes()
}
