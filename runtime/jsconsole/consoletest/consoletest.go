// Package consoletest is test support for the JavaScript runtimes: one
// program (testdata/console.js) that every runtime's tests run, and what
// its console channel and raw output must be (testdata/want.json), so
// that goja and node are held to one expectation. Not product code.
package consoletest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"

	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// TestCase is the shared program and what it must produce.
type TestCase struct {
	Program string
	Want    struct {
		Lines            []jsconsole.Line `json:"lines"`
		Thrown           string           `json:"thrown"`
		Stdout           string           `json:"stdout"`
		StderrStartsWith string           `json:"stderrStartsWith"`
		// StderrContains is in the uncaught error's report, whose layout
		// differs between the runtimes.
		StderrContains string `json:"stderrContains"`
	}
}

// Load reads the shared test case.
func Load() (TestCase, error) {
	var tc TestCase
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	prog, err := os.ReadFile(filepath.Join(dir, "testdata", "console.js"))
	if err != nil {
		return tc, err
	}
	tc.Program = string(prog)
	want, err := os.ReadFile(filepath.Join(dir, "testdata", "want.json"))
	if err != nil {
		return tc, err
	}
	return tc, json.Unmarshal(want, &tc.Want)
}

// Check compares what a runtime produced with the test case: its raw
// stdout and stderr and its console channel. It returns the differences.
func (tc TestCase) Check(stdout, stderr string, channel []byte) []string {
	var diffs []string
	var p jsconsole.Parser
	lines := p.Write(channel)
	if !reflect.DeepEqual(lines, tc.Want.Lines) {
		diffs = append(diffs, fmt.Sprintf("console lines %+v, want %+v", lines, tc.Want.Lines))
	}
	if thrown, _ := p.Thrown(); thrown != tc.Want.Thrown {
		diffs = append(diffs, fmt.Sprintf("thrown %q, want %q", thrown, tc.Want.Thrown))
	}
	if stdout != tc.Want.Stdout {
		diffs = append(diffs, fmt.Sprintf("stdout %q, want %q", stdout, tc.Want.Stdout))
	}
	if !strings.HasPrefix(stderr, tc.Want.StderrStartsWith) || !strings.Contains(stderr, tc.Want.StderrContains) {
		diffs = append(diffs, fmt.Sprintf("stderr %q, want it to start with %q and hold %q", stderr, tc.Want.StderrStartsWith, tc.Want.StderrContains))
	}
	return diffs
}
