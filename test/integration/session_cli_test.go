//go:build linux

package integration

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/execfarm/execfarm/test/testbin"
)

// The execfarm binary of TestSessionCLI, built once.
var (
	cliOnce sync.Once
	cliErr  error
)

// cli runs the execfarm binary (built once into the suite's directory)
// as who against si, and returns its stdout, stderr and exit status.
func (si *sessionInstance) cli(t *testing.T, who string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := filepath.Join(host.dir, "execfarm")
	cliOnce.Do(func() { cliErr = testbin.Build(host.dir, "execfarm") })
	if cliErr != nil {
		t.Fatalf("build execfarm: %v", cliErr)
	}
	cmd := exec.CommandContext(callCtx(t), bin, append([]string{"--socket", si.tc.SocketPath}, args...)...)
	cmd.Env = []string{"EXECFARM_TOKEN=" + sessionTokens[who], "PATH=/usr/bin:/bin"}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("execfarm %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestSessionCLI drives session sandboxes through the CLI, as a user
// would: create (the id on its own line), exec (its output, its exit
// status, 137 with the dropped bytes marked past the output limit), ls of
// sandboxes by label, status, events, rm; then status of the removed
// sandbox says SandboxNotFound with exit status 1.
func TestSessionCLI(t *testing.T) {
	si := startSessionInstance(t, "sess-cli", 4)
	out, errOut, code := si.cli(t, "alice", "sandbox", "create", "--ttl", "10m", "--label", "team=a", "--memory", "256Mi", "--timeout", "20s",
		"--output-limit", "1Ki")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("sandbox create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	if out, errOut, code = si.cli(t, "alice", "exec", id, "--", "sh", "-c", "echo made > f; cat f; echo oops >&2; exit 3"); code != 3 || out != "made\n" || errOut != "oops\n" {
		t.Fatalf("exec: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, code = si.cli(t, "alice", "exec", id, "--", "cat f && pwd"); code != 0 || out != "made\n/workspace\n" {
		t.Fatalf("second exec: exit %d, stdout %q", code, out)
	}
	// A program that cannot be started exits 126 as a shell's, and says why.
	if _, errOut, code = si.cli(t, "alice", "exec", id, "--workdir", "/proc/1/root", "--", "pwd"); code != 126 || !strings.Contains(errOut, "permission denied") {
		t.Fatalf("exec in a workdir it may not enter: exit %d, stderr %q; want 126 saying permission denied", code, errOut)
	}
	if out, _, code = si.cli(t, "alice", "sandbox", "ls", "--label", "team=a"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "SandboxReady") {
		t.Fatalf("sandbox ls: exit %d\n%s", code, out)
	}
	if out, _, _ = si.cli(t, "bob", "sandbox", "ls"); strings.Contains(out, id) {
		t.Fatalf("bob lists alice's sandbox:\n%s", out)
	}
	if out, _, code = si.cli(t, "alice", "sandbox", "status", id); code != 0 || !strings.Contains(out, "status: SandboxReady") ||
		!strings.Contains(out, "memory 268435456 bytes") || !strings.Contains(out, "timeout 20000 ms") {
		t.Fatalf("sandbox status: exit %d\n%s", code, out)
	}
	out, _, code = si.cli(t, "alice", "events", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 7 || !strings.HasPrefix(lines[0], "0\t") || !strings.Contains(lines[0], "ready") ||
		!strings.Contains(out, "exec_ended") || !strings.Contains(out, `"made\n"`) {
		t.Fatalf("events: exit %d\n%s", code, out)
	}
	if out, _, code = si.cli(t, "alice", "events", id, "--from", "3"); code != 0 || !strings.HasPrefix(out, "3\t") {
		t.Fatalf("events --from 3: exit %d\n%s", code, out)
	}
	// Past the sandbox's output limit (13893 bytes, 1 KiB kept) exec exits
	// as run does: 137, with the gap marked and the truncation said.
	if out, errOut, code = si.cli(t, "alice", "exec", id, "--", "seq 1 3000"); code != 137 || !strings.HasPrefix(out, "1\n2\n3\n") ||
		!strings.HasSuffix(out, "2999\n3000\n") || !strings.Contains(errOut, "bytes dropped here") || !strings.Contains(errOut, "stdout truncated") {
		t.Fatalf("exec past the output limit: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
	if _, errOut, code = si.cli(t, "bob", "sandbox", "rm", id); code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
		t.Fatalf("bob's rm of alice's sandbox: exit %d, %q", code, errOut)
	}
	if out, _, code = si.cli(t, "alice", "sandbox", "rm", id); code != 0 || out != id+"\n" {
		t.Fatalf("sandbox rm: exit %d, %q", code, out)
	}
	if out, _, code = si.cli(t, "alice", "sandbox", "status", id); code != 1 || !strings.Contains(out, "status: SandboxNotFound") {
		t.Fatalf("status after rm: exit %d\n%s", code, out)
	}
}
