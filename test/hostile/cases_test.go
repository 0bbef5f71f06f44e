package hostile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// casesDir holds one file per case.
const casesDir = "cases"

// caseFileNames returns the case files, sorted; no files is a failure.
func caseFileNames(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(casesDir)
	if err != nil {
		t.Fatalf("hostile: list case files: %v", err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("hostile: no case files in %s", casesDir)
	}
	return names
}

// loadCase reads and parses one case file, failing the test when it is
// malformed.
func loadCase(t testing.TB, name string) *caseFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(casesDir, name))
	if err != nil {
		t.Fatalf("hostile: read case file: %v", err)
	}
	c, err := parseCase(name, data)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return c
}

// TestCaseFilesAreWellFormed parses every case file, without root: a
// malformed file fails here on any machine, not only where sandboxes run.
func TestCaseFilesAreWellFormed(t *testing.T) {
	for _, name := range caseFileNames(t) {
		t.Run(name, func(t *testing.T) { loadCase(t, name) })
	}
}

// TestParseCaseRejectsMalformed checks that every kind of mistake in a
// case file is an error wrapping errMalformed rather than a case that
// silently checks less.
func TestParseCaseRejectsMalformed(t *testing.T) {
	const ok = "# description: d\n# runtime: shell\n# expect-state: COMPLETED\ntrue\n"
	if _, err := parseCase("ok.sh", []byte(ok)); err != nil {
		t.Fatalf("well-formed case rejected: %v", err)
	}
	tests := []struct {
		name, file, want string
	}{
		{"no description", "# runtime: shell\n# expect-state: COMPLETED\ntrue\n", "description"},
		{"no runtime", "# description: d\n# expect-state: COMPLETED\ntrue\n", "runtime"},
		{"no expect-state", "# description: d\n# runtime: shell\ntrue\n", "expect-state"},
		{"unknown directive", "# description: d\n# runtime: shell\n# expect-stdut-contains: x\n# expect-state: COMPLETED\ntrue\n", "unknown directive"},
		{"unknown runtime", "# description: d\n# runtime: ruby\n# expect-state: COMPLETED\ntrue\n", "unknown runtime"},
		{"unknown state", "# description: d\n# runtime: shell\n# expect-state: DONE\ntrue\n", "terminal state"},
		{"unknown reason", "# description: d\n# runtime: shell\n# expect-state: FAILED\n# expect-reason: OOPS\ntrue\n", "termination reason"},
		{"unknown limit", "# description: d\n# runtime: shell\n# limits: memroy_bytes=1\n# expect-state: COMPLETED\ntrue\n", "unknown limit"},
		{"bad limit value", "# description: d\n# runtime: shell\n# limits: processes=-1\n# expect-state: COMPLETED\ntrue\n", "positive"},
		{"limit not key=value", "# description: d\n# runtime: shell\n# limits: processes\n# expect-state: COMPLETED\ntrue\n", "key=value"},
		{"duplicate directive", "# description: d\n# runtime: shell\n# runtime: shell\n# expect-state: COMPLETED\ntrue\n", "twice"},
		{"empty value", "# description: d\n# runtime: shell\n# expect-exit-code:\n# expect-state: COMPLETED\ntrue\n", "no value"},
		{"bad integer", "# description: d\n# runtime: shell\n# expect-exit-code: one\n# expect-state: COMPLETED\ntrue\n", "integer"},
		{"bad bool", "# description: d\n# runtime: shell\n# expect-stdout-truncated: maybe\n# expect-state: COMPLETED\ntrue\n", "expect-stdout-truncated"},
		{"bad regexp", "# description: d\n# runtime: shell\n# expect-stdout-matches: (\n# expect-state: COMPLETED\ntrue\n", "expect-stdout-matches"},
		{"unknown setup", "# description: d\n# setup: host-ftp\n# runtime: shell\n# expect-state: COMPLETED\ntrue\n", "unknown setup"},
		{"unknown placeholder", "# description: d\n# runtime: shell\n# expect-state: COMPLETED\necho {{NOPE}}\n", "{{NOPE}}"},
		{"placeholder without setup", "# description: d\n# runtime: shell\n# expect-state: COMPLETED\necho {{HOST_TCP_PORT}}\n", "{{HOST_TCP_PORT}}"},
		{"header only", "# description: d\n# runtime: shell\n# expect-state: COMPLETED\n", "no program"},
		{"goja with # header", "# description: d\n# runtime: goja\n# expect-state: COMPLETED\nconsole.log(1)\n", "comments"},
		{"then step without runtime", ok + "# --- then ---\n# expect-state: COMPLETED\ntrue\n", "runtime"},
		{"setup in a then step", ok + "# --- then ---\n# setup: host-tcp-listener\n# runtime: shell\n# expect-state: COMPLETED\ntrue\n", "first step"},
		{"empty then step", ok + "# --- then ---\n", "runtime"},
		{"file step outside a session", ok + "# --- then ---\n# file: stat x\n# expect-file: ok\n", "session: true"},
		{"file step with a program", "# description: d\n# session: true\n# file: stat x\n# expect-file: ok\ntrue\n", "no runtime and no program"},
		{"file step with a runtime", "# description: d\n# session: true\n# file: stat x\n# runtime: shell\n# expect-file: ok\n", "no runtime"},
		{"file step without expect-file", "# description: d\n# session: true\n# file: stat x\n", "expect-file"},
		{"unknown file operation", "# description: d\n# session: true\n# file: chmod x\n# expect-file: ok\n", "unknown file operation"},
		{"upload without content", "# description: d\n# session: true\n# file: upload x\n# expect-file: ok\n", "ARGUMENT"},
		{"download with an argument", "# description: d\n# session: true\n# file: download x y\n# expect-file: ok\n", "want"},
		{"bad upload-zeros size", "# description: d\n# session: true\n# file: upload-zeros x lots\n# expect-file: ok\n", "size"},
		{"unknown file outcome", "# description: d\n# session: true\n# file: stat x\n# expect-file: NOPE\n", "unknown outcome"},
		{"session in a then step", ok + "# --- then ---\n# session: true\n# runtime: shell\n# expect-state: COMPLETED\ntrue\n", "first step"},
		{"session exec of node", "# description: d\n# session: true\n// runtime: node\n// expect-state: COMPLETED\nconsole.log(1)\n", "runtime"},
		{"test mode without the tests line", "// description: d\n// runtime: goja\n// mode: test\n// expect-state: COMPLETED\n// expect-test-success: true\nf()\n", "--- tests ---"},
		{"test mode of shell", "# description: d\n# runtime: shell\n# mode: test\n# expect-state: COMPLETED\n# expect-test-success: true\ntrue\n// --- tests ---\n", "goja or node"},
		{"test mode without expect-test-success", "// description: d\n// runtime: goja\n// mode: test\n// expect-state: COMPLETED\nf()\n// --- tests ---\ntest()\n", "expect-test-success"},
		{"unknown mode", "// description: d\n// runtime: goja\n// mode: exam\n// expect-state: COMPLETED\nf()\n", "unknown mode"},
		{"bad test summary", "// description: d\n// runtime: goja\n// mode: test\n// expect-state: COMPLETED\n// expect-test-success: true\n// expect-test-summary: total=1\nf()\n// --- tests ---\n", "total=N"},
		{"test expectation outside test mode", "// description: d\n// runtime: goja\n// expect-state: COMPLETED\n// expect-test-success: true\nf()\n", "mode: test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCase("bad.sh", []byte(tt.file))
			if !errors.Is(err, errMalformed) {
				t.Fatalf("parseCase: err %v, want errMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parseCase: %v; want the message to mention %q", err, tt.want)
			}
		})
	}
}

// TestParseCaseTestMode checks the parts of a test-mode case.
func TestParseCaseTestMode(t *testing.T) {
	c, err := parseCase("t.ts", []byte("// description: d\n// runtime: node\n// mode: test\n// expect-state: FAILED\n// expect-test-success: false\n// expect-test-summary: total=3 passed=1 failed=1 skipped=1\n// expect-test-error-contains: x\nconst a = 1;\n// --- tests ---\ntest('t', () => {});\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := c.steps[0]
	req := st.testRequest(nil)
	if !st.test || !strings.HasSuffix(req.GetCode(), "const a = 1;\n") || req.GetTests() != "test('t', () => {});\n" || req.GetRuntime() != sandboxv1.Runtime_RUNTIME_NODE {
		t.Errorf("request %v", req)
	}
	e := st.expect
	if *e.testSuccess || e.testSummary.GetTotal() != 3 || e.testSummary.GetSkipped() != 1 || len(e.testErrorContains) != 1 {
		t.Errorf("expectations %+v", e)
	}
}

// TestParseCaseSteps checks the parts of a two-step case.
func TestParseCaseSteps(t *testing.T) {
	file := `#!/bin/sh
# description: two steps
# setup: host-tcp-listener
# runtime: shell
# limits: processes=64 timeout_ms=3000 memory_bytes=64Mi
# env: PORT={{HOST_TCP_PORT}}
# expect-state: FAILED|TIMEOUT
# expect-reason: PIDS|TIMEOUT
# expect-stdout-contains: a
# expect-stdout-contains: b
# this line is prose
echo a b
# --- then ---
# runtime: python
# expect-state: COMPLETED
print("{{MARKER}}")
`
	c, err := parseCase("two.sh", []byte(file))
	if err != nil {
		t.Fatalf("parseCase: %v", err)
	}
	if len(c.steps) != 2 || c.description != "two steps" || len(c.setups) != 1 {
		t.Fatalf("parsed %d steps, description %q, setups %v", len(c.steps), c.description, c.setups)
	}
	s0, s1 := c.steps[0], c.steps[1]
	if s0.limits["memory_bytes"] != 64<<20 || s0.limits["processes"] != 64 || s0.limits["timeout_ms"] != 3000 {
		t.Errorf("limits %v", s0.limits)
	}
	if len(s0.expect.states) != 2 || len(s0.expect.reasons) != 2 || len(s0.expect.stdoutContains) != 2 {
		t.Errorf("expectations %+v", s0.expect)
	}
	if s1.runtime != "python" || s1.line != 14 || !strings.HasPrefix(s1.code, "# runtime: python\n") {
		t.Errorf("second step: runtime %q line %d code %q", s1.runtime, s1.line, s1.code)
	}
	req := s0.request(map[string]string{"HOST_TCP_PORT": "4242"})
	if req.GetEnv()["PORT"] != "4242" || req.GetLimits().GetMaxProcesses() != 64 || req.GetLimits().GetMaxMemoryBytes() != 64<<20 {
		t.Errorf("request %v", req)
	}
	if got := s1.request(map[string]string{"MARKER": "m1"}).GetCode(); !strings.Contains(got, `print("m1")`) {
		t.Errorf("substituted code %q", got)
	}
}

// TestParseCaseSession checks the parts of a session case.
func TestParseCaseSession(t *testing.T) {
	file := `# description: a session
# session: true
# setup: host-marker-file
# limits: workspace_bytes=2Mi
# file: upload-zeros big 4Mi
# expect-file: RESOURCE_EXHAUSTED
# --- then ---
# file: upload a/{{HOST_MARKER_NAME}} some content {{MARKER}}
# expect-file: ok
# --- then ---
# file: stat a
# expect-file: ok
# expect-exists: true
# expect-content-contains: directory
# --- then ---
# runtime: shell
# expect-state: COMPLETED
cat a/*
`
	c, err := parseCase("s.sh", []byte(file))
	if err != nil {
		t.Fatalf("parseCase: %v", err)
	}
	if !c.session || len(c.steps) != 4 {
		t.Fatalf("session %v, %d steps", c.session, len(c.steps))
	}
	if f := c.steps[0].file; f == nil || f.op != "upload-zeros" || f.path != "big" || f.arg != "4Mi" || c.steps[0].limits["workspace_bytes"] != 2<<20 {
		t.Errorf("step 1: %+v, limits %v", f, c.steps[0].limits)
	}
	if f := c.steps[1].file; f == nil || f.path != "a/{{HOST_MARKER_NAME}}" || f.arg != "some content {{MARKER}}" {
		t.Errorf("step 2: %+v", f)
	}
	if e := c.steps[2].expect; e.file != "ok" || e.exists == nil || !*e.exists || len(e.contentContains) != 1 {
		t.Errorf("step 3: %+v", e)
	}
	if c.steps[3].file != nil || c.steps[3].runtime != "shell" {
		t.Errorf("step 4: %+v", c.steps[3])
	}
}

// TestParseCaseContinuation checks that indented header lines continue the
// description and are never read as directives.
func TestParseCaseContinuation(t *testing.T) {
	file := "# description: first part\n#   memory: second part\n# runtime: shell\n#   limits: prose, not a directive\n# expect-state: COMPLETED\ntrue\n"
	c, err := parseCase("cont.sh", []byte(file))
	if err != nil {
		t.Fatalf("parseCase: %v", err)
	}
	if c.description != "first part memory: second part" {
		t.Errorf("description %q", c.description)
	}
	if len(c.steps[0].limits) != 0 {
		t.Errorf("an indented line set limits %v", c.steps[0].limits)
	}
}
