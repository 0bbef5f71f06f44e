//go:build linux

package integration

import (
	"strings"
	"testing"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

func nodeReq(code string) *sandboxv1.ExecuteRequest {
	return request(sandboxv1.Runtime_RUNTIME_NODE, code, 20000*testbin.TimeScale())
}

// requireNode fails (never skips) when the node runtime is not configured:
// `make test` installs the bundle (make bundle).
func requireNode(t *testing.T, in *instance) {
	t.Helper()
	resp, err := in.client.Execute(callCtx(t), nodeReq("console.log(1)"))
	if err != nil {
		t.Fatalf("node runtime unavailable (run `make bundle`): %v", err)
	}
	if !resp.GetSuccess() {
		t.Fatalf("node runtime broken: %s", describe(resp))
	}
}

// TestNodeRequireAllowList: built-ins and relative paths are refused with
// the documented message; allow-listed packages and their subpaths load;
// process.env is empty.
func TestNodeRequireAllowList(t *testing.T) {
	in := requireSandbox(t)
	requireNode(t, in)
	code := `
for (const m of ["child_process", "fs", "./x"]) {
  try { require(m); console.log("LOADED", m); } catch (e) { console.log(e.message); }
}
const cfg = require("@kubernetes/client-node/dist/config");
console.log("config", typeof cfg.KubeConfig);
console.log("env", JSON.stringify(process.env));
const n: number = 6 * 7;
console.log("answer", n);
`
	resp := execute(t, in.client, nodeReq(code))
	if !resp.GetSuccess() {
		t.Fatalf("%s", describe(resp))
	}
	want := []string{
		"Module 'child_process' not available in sandbox",
		"Module 'fs' not available in sandbox",
		"Module './x' not available in sandbox",
		"config function",
		"env {}",
		"answer 42",
	}
	for _, w := range want {
		if !strings.Contains(resp.GetOutput(), w) {
			t.Errorf("output lacks %q:\n%s", w, resp.GetOutput())
		}
	}
	if strings.Contains(resp.GetOutput(), "LOADED") {
		t.Errorf("a refused module loaded:\n%s", resp.GetOutput())
	}
}

func TestPythonRuntime(t *testing.T) {
	in := requireSandbox(t)
	requirePython(t)
	resp := execute(t, in.client, pythonReq("print(sum(range(10)))", 0))
	if !resp.GetSuccess() || resp.GetOutput() != "45\n" {
		t.Fatalf("%s", describe(resp))
	}
	bomb := pythonReq("b = []\nwhile True: b.append(bytearray(16 << 20))", 10000)
	bomb.Limits.MaxMemoryBytes = 64 << 20
	resp = execute(t, in.client, bomb)
	if resp.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY {
		t.Fatalf("python memory bomb: %s", describe(resp))
	}
}
