package hostile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

// errMalformed marks every problem with a case file; the suite fails (never
// skips) on it.
var errMalformed = errors.New("hostile: malformed case file")

// caseFile is one parsed file of cases/: a program in one or more steps,
// each step run as a new execution after the previous one ended.
type caseFile struct {
	name        string   // file name
	description string   // what the case proves (required)
	setups      []string // host preparations, see knownSetups
	steps       []*step  // at least one
	// session: every step runs in one session sandbox, created before the
	// first and deleted after the last; steps may be file operations.
	session bool
}

// step is one execution of a case, or in a session case one file
// operation.
type step struct {
	line    int    // 1-based line of the step's first line in the file
	runtime string // "shell", "python" or "goja"
	code    string // the program, placeholders not yet substituted
	limits  map[string]int64
	env     map[string]string
	expect  expectations
	file    *fileOp // a file operation instead of a program (session cases)
	// test: the step runs through ExecuteTest, code the code under test
	// (before the `// --- tests ---` line) and tests the rest.
	test  bool
	tests string
}

// fileOp is a file step: op on path (placeholders not yet substituted);
// arg is an upload's content, or its size for upload-zeros.
type fileOp struct {
	op, path, arg string
}

// knownFileOps are the operations of `file:`, and whether each takes an
// argument after the path.
var knownFileOps = map[string]bool{
	"upload": true, "upload-zeros": true, "download": false, "stat": false,
	"list": false, "remove": false, "remove-recursive": false, "mkdir": false,
}

// fileCodes are the outcomes `expect-file:` names: "ok", or the gRPC code
// a file operation of the public API fails with.
var fileCodes = []string{"ok", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION"}

// expectations are what a step's ExecuteResponse must show. Nil pointers
// and empty slices are not checked.
type expectations struct {
	states, reasons                       []string // alternatives, without enum prefixes
	exitCode, signal                      *int64
	stdoutContains, stdoutNotContains     []string
	stderrContains, stderrNotContains     []string
	stdoutMatches, stderrMatches          []string // regular expressions
	stdoutTruncated, stderrTruncated      *bool
	stdoutMaxBytes, stderrMaxBytes        *int64 // length of the returned text
	wallMaxMs, cpuMaxPercent, pidsPeakMax *int64
	// File steps.
	file                                string // expect-file: ok or a code
	contentContains, contentNotContains []string
	exists                              *bool
	// Test steps (mode: test).
	testSuccess       *bool
	testSummary       *sandboxv1.TestSummary
	testErrorContains []string
}

// expectsOutput reports whether the step expects text in the program's
// output: something it must have written before it ends.
func (e *expectations) expectsOutput() bool {
	return len(e.stdoutContains)+len(e.stderrContains)+len(e.stdoutMatches)+len(e.stderrMatches) > 0
}

// Known values of the header directives.
var (
	knownRuntimes = map[string]sandboxv1.Runtime{
		"shell":  sandboxv1.Runtime_RUNTIME_SHELL,
		"python": sandboxv1.Runtime_RUNTIME_PYTHON,
		"goja":   sandboxv1.Runtime_RUNTIME_GOJA,
		"node":   sandboxv1.Runtime_RUNTIME_NODE,
	}
	// knownLimits maps limits: keys to ResourceLimits fields.
	knownLimits = map[string]func(*sandboxv1.ResourceLimits, int64){
		"memory_bytes":     func(l *sandboxv1.ResourceLimits, v int64) { l.MaxMemoryBytes = v },
		"cpu_percent":      func(l *sandboxv1.ResourceLimits, v int64) { l.MaxCpuPercent = int32(v) },
		"file_descriptors": func(l *sandboxv1.ResourceLimits, v int64) { l.MaxFileDescriptors = int32(v) },
		"processes":        func(l *sandboxv1.ResourceLimits, v int64) { l.MaxProcesses = int32(v) },
		"output_bytes":     func(l *sandboxv1.ResourceLimits, v int64) { l.MaxOutputBytes = v },
		"timeout_ms":       func(l *sandboxv1.ResourceLimits, v int64) { l.TimeoutMs = v },
		"cpu_time_ms":      func(l *sandboxv1.ResourceLimits, v int64) { l.CpuTimeMs = v },
		"workspace_bytes":  func(l *sandboxv1.ResourceLimits, v int64) { l.WorkspaceBytes = v },
	}
	// knownSetups are what `setup:` may ask the suite to prepare on the
	// host, and the placeholders each one provides.
	knownSetups = map[string][]string{
		"host-tcp-listener": {"HOST_TCP_PORT"},
		"host-marker-file":  {"HOST_MARKER_PATH", "HOST_MARKER_NAME", "HOST_MARKER_CONTENT"},
		// The case runs on a second supervisor with Kubernetes (a fake API
		// server: policy get, list in namespace default) and Prometheus
		// access: kc's endpoint is http://127.0.0.1:8001 in the sandbox.
		"host-proxy": nil,
	}
	// alwaysPlaceholders are substituted in every case.
	alwaysPlaceholders = []string{"MARKER", "STATE_DIR", "SUPERVISOR_SOCKET", "SUPERVISOR_LOG", "WORKER_BINARY"}
)

var (
	directiveRe   = regexp.MustCompile(`^([a-z][a-z0-9-]*):\s*(.*)$`)
	separatorRe   = regexp.MustCompile(`^\s*(#|//)\s*-{3,}\s*then\s*-{3,}\s*$`)
	testsRe       = regexp.MustCompile(`^\s*//\s*-{3,}\s*tests\s*-{3,}\s*$`)
	summaryRe     = regexp.MustCompile(`^total=(\d+) passed=(\d+) failed=(\d+) skipped=(\d+)$`)
	placeholderRe = regexp.MustCompile(`\{\{([A-Za-z0-9_]+)\}\}`)
)

// parseCase parses the case file called name with content data. Every
// error wraps errMalformed and names the file and line.
func parseCase(name string, data []byte) (*caseFile, error) {
	c := &caseFile{name: name}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", errMalformed, name, line, fmt.Sprintf(format, args...))
	}
	if !strings.HasSuffix(string(data), "\n") {
		data = append(data, '\n')
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && !separatorRe.MatchString(lines[i]) {
			continue
		}
		st, err := parseStep(c, lines[start:i], start+1, fail)
		if err != nil {
			return nil, err
		}
		c.steps = append(c.steps, st)
		start = i + 1
	}
	if c.description == "" {
		return nil, fail(1, "missing `description:` in the first step's header")
	}
	return c, nil
}

// parseStep parses the lines of one step; first is the 1-based line number
// of lines[0].
func parseStep(c *caseFile, lines []string, first int, fail func(int, string, ...any) error) (*step, error) {
	st := &step{line: first, limits: map[string]int64{}, env: map[string]string{}}
	isFirst := len(c.steps) == 0
	seen := map[string]bool{}
	prefix, lastKey := "", ""
	for i, raw := range lines {
		ln := first + i
		line := strings.TrimSpace(raw)
		if isFirst && i == 0 && strings.HasPrefix(line, "#!") {
			continue
		}
		var rest string
		switch {
		case strings.HasPrefix(line, "//"):
			rest = strings.TrimPrefix(line, "//")
		case strings.HasPrefix(line, "#"):
			rest = strings.TrimPrefix(line, "#")
		}
		text := strings.TrimSpace(rest)
		if text == "" {
			break // the header ends at the first blank, empty-comment or code line
		}
		if prefix == "" {
			prefix = "#"
			if strings.HasPrefix(line, "//") {
				prefix = "//"
			}
		}
		if strings.HasPrefix(rest, "  ") || strings.HasPrefix(rest, "\t") {
			// An indented line continues the description, or is prose.
			if lastKey == "description" {
				c.description += " " + text
			}
			continue
		}
		m := directiveRe.FindStringSubmatch(text)
		lastKey = ""
		if m == nil {
			continue // prose
		}
		key, val := m[1], strings.TrimSpace(m[2])
		if val == "" {
			return nil, fail(ln, "directive %q has no value", key)
		}
		repeatable := strings.HasSuffix(key, "-contains") || strings.HasSuffix(key, "-matches") || key == "env" || key == "setup"
		if key == "file" && st.file != nil {
			return nil, fail(ln, "directive %q given twice", key)
		}
		if seen[key] && !repeatable {
			return nil, fail(ln, "directive %q given twice", key)
		}
		seen[key] = true
		lastKey = key
		if err := st.apply(c, isFirst, key, val); err != nil {
			return nil, fail(ln, "%s: %v", key, err)
		}
	}
	hasProgram := slices.ContainsFunc(lines, func(l string) bool {
		l = strings.TrimSpace(l)
		return l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "//")
	})
	if st.file != nil {
		switch {
		case !c.session:
			return nil, fail(first, "a `file:` step needs `session: true` in the first step")
		case st.runtime != "" || hasProgram:
			return nil, fail(first, "a `file:` step has no runtime and no program")
		case st.expect.file == "":
			return nil, fail(first, "missing `expect-file:` in the file step's header")
		case prefix != "#":
			return nil, fail(first, "a file step needs a header of %q comments, found %q", "#", prefix)
		}
		if err := checkPlaceholders(c, st); err != nil {
			return nil, fail(first, "%v", err)
		}
		return st, nil
	}
	if st.runtime == "" {
		return nil, fail(first, "missing `runtime:` in the step's header")
	}
	if c.session && st.runtime == "node" {
		return nil, fail(first, "a session case's execs run runtime shell, python or goja")
	}
	if len(st.expect.states) == 0 {
		return nil, fail(first, "missing `expect-state:` in the step's header")
	}
	want := "#"
	if st.runtime == "goja" || st.runtime == "node" {
		want = "//"
	}
	if prefix != want {
		return nil, fail(first, "runtime %s needs a header of %q comments, found %q", st.runtime, want, prefix)
	}
	if !hasProgram {
		return nil, fail(first, "the step has a header but no program")
	}
	st.code = strings.Join(lines, "\n") + "\n"
	if st.test {
		i := slices.IndexFunc(lines, testsRe.MatchString)
		switch {
		case c.session:
			return nil, fail(first, "`mode: test` is not for session cases")
		case st.runtime != "goja" && st.runtime != "node":
			return nil, fail(first, "`mode: test` needs runtime goja or node")
		case i < 0:
			return nil, fail(first, "`mode: test` needs a `// --- tests ---` line between the code and the tests")
		case st.expect.testSuccess == nil:
			return nil, fail(first, "`mode: test` needs `expect-test-success:`")
		}
		st.code = strings.Join(lines[:i], "\n") + "\n"
		st.tests = strings.Join(lines[i+1:], "\n") + "\n"
	} else if len(st.expect.testErrorContains) > 0 || st.expect.testSuccess != nil || st.expect.testSummary != nil {
		return nil, fail(first, "`expect-test-*` directives need `mode: test`")
	}
	if err := checkPlaceholders(c, st); err != nil {
		return nil, fail(first, "%v", err)
	}
	return st, nil
}

// apply records one directive.
func (st *step) apply(c *caseFile, isFirst bool, key, val string) error {
	e := &st.expect
	switch key {
	case "description":
		if !isFirst {
			return errors.New("only in the first step")
		}
		c.description = val
	case "setup":
		if !isFirst {
			return errors.New("only in the first step")
		}
		if _, ok := knownSetups[val]; !ok {
			return fmt.Errorf("unknown setup %q (known: %s)", val, strings.Join(sortedKeys(knownSetups), ", "))
		}
		c.setups = append(c.setups, val)
	case "session":
		if !isFirst {
			return errors.New("only in the first step")
		}
		b, err := strconv.ParseBool(val)
		if err != nil {
			return err
		}
		c.session = b
	case "file":
		op, rest, _ := strings.Cut(val, " ")
		takesArg, ok := knownFileOps[op]
		if !ok {
			return fmt.Errorf("unknown file operation %q (known: %s)", op, strings.Join(sortedKeys(knownFileOps), ", "))
		}
		path, arg, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if path == "" || takesArg != (arg != "") {
			return fmt.Errorf("%q: want %q PATH%s", val, op, map[bool]string{true: " ARGUMENT", false: ""}[takesArg])
		}
		if op == "upload-zeros" {
			if n, err := parseSize(arg); err != nil || n < 0 {
				return fmt.Errorf("upload-zeros size %q is not a size", arg)
			}
		}
		st.file = &fileOp{op: op, path: path, arg: arg}
	case "mode":
		if val != "test" {
			return fmt.Errorf("unknown mode %q (known: test)", val)
		}
		st.test = true
	case "expect-test-success":
		return setBool(&e.testSuccess, val)
	case "expect-test-summary":
		m := summaryRe.FindStringSubmatch(val)
		if m == nil {
			return fmt.Errorf("%q: want total=N passed=N failed=N skipped=N", val)
		}
		n := make([]int32, 4)
		for i := range n {
			v, err := strconv.ParseInt(m[i+1], 10, 32)
			if err != nil {
				return err
			}
			n[i] = int32(v)
		}
		e.testSummary = &sandboxv1.TestSummary{Total: n[0], Passed: n[1], Failed: n[2], Skipped: n[3]}
	case "expect-test-error-contains":
		e.testErrorContains = append(e.testErrorContains, val)
	case "expect-file":
		if !slices.Contains(fileCodes, val) {
			return fmt.Errorf("unknown outcome %q (%s)", val, strings.Join(fileCodes, ", "))
		}
		e.file = val
	case "expect-content-contains":
		e.contentContains = append(e.contentContains, val)
	case "expect-content-not-contains":
		e.contentNotContains = append(e.contentNotContains, val)
	case "expect-exists":
		return setBool(&e.exists, val)
	case "runtime":
		if _, ok := knownRuntimes[val]; !ok {
			return fmt.Errorf("unknown runtime %q (known: %s)", val, strings.Join(sortedKeys(knownRuntimes), ", "))
		}
		st.runtime = val
	case "limits":
		for _, f := range strings.Fields(val) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return fmt.Errorf("%q is not key=value", f)
			}
			if _, known := knownLimits[k]; !known {
				return fmt.Errorf("unknown limit %q (known: %s)", k, strings.Join(sortedKeys(knownLimits), ", "))
			}
			if _, dup := st.limits[k]; dup {
				return fmt.Errorf("limit %q given twice", k)
			}
			n, err := parseSize(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("limit %s: %q is not a positive number (suffixes Ki, Mi, Gi)", k, v)
			}
			st.limits[k] = n
		}
	case "env":
		k, v, ok := strings.Cut(val, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not KEY=VALUE", val)
		}
		st.env[k] = v
	case "expect-state":
		for _, s := range strings.Split(val, "|") {
			s = strings.TrimSpace(s)
			if !slices.Contains([]string{"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"}, s) {
				return fmt.Errorf("unknown terminal state %q (COMPLETED, FAILED, TIMEOUT, CANCELLED)", s)
			}
			e.states = append(e.states, s)
		}
	case "expect-reason":
		for _, s := range strings.Split(val, "|") {
			s = strings.TrimSpace(s)
			if _, ok := sandboxv1.TerminationReason_value["TERMINATION_REASON_"+s]; !ok || s == "UNSPECIFIED" {
				return fmt.Errorf("unknown termination reason %q", s)
			}
			e.reasons = append(e.reasons, s)
		}
	case "expect-exit-code":
		return setInt(&e.exitCode, val)
	case "expect-signal":
		return setInt(&e.signal, val)
	case "expect-stdout-contains":
		e.stdoutContains = append(e.stdoutContains, val)
	case "expect-stdout-not-contains":
		e.stdoutNotContains = append(e.stdoutNotContains, val)
	case "expect-stderr-contains":
		e.stderrContains = append(e.stderrContains, val)
	case "expect-stderr-not-contains":
		e.stderrNotContains = append(e.stderrNotContains, val)
	case "expect-stdout-matches", "expect-stderr-matches":
		if _, err := regexp.Compile(val); err != nil {
			return err
		}
		if key == "expect-stdout-matches" {
			e.stdoutMatches = append(e.stdoutMatches, val)
		} else {
			e.stderrMatches = append(e.stderrMatches, val)
		}
	case "expect-stdout-truncated":
		return setBool(&e.stdoutTruncated, val)
	case "expect-stderr-truncated":
		return setBool(&e.stderrTruncated, val)
	case "expect-stdout-max-bytes":
		return setInt(&e.stdoutMaxBytes, val)
	case "expect-stderr-max-bytes":
		return setInt(&e.stderrMaxBytes, val)
	case "expect-wall-max-ms":
		return setInt(&e.wallMaxMs, val)
	case "expect-cpu-max-percent":
		return setInt(&e.cpuMaxPercent, val)
	case "expect-pids-peak-max":
		return setInt(&e.pidsPeakMax, val)
	default:
		return errors.New("unknown directive (see README.md)")
	}
	return nil
}

// checkPlaceholders fails on a placeholder that is unknown or whose setup
// the case does not ask for.
func checkPlaceholders(c *caseFile, st *step) error {
	texts := []string{st.code}
	if st.file != nil {
		texts = append(texts, st.file.path, st.file.arg)
	}
	e := st.expect
	for _, l := range [][]string{e.stdoutContains, e.stdoutNotContains, e.stderrContains, e.stderrNotContains, e.stdoutMatches, e.stderrMatches, e.contentContains, e.contentNotContains} {
		texts = append(texts, l...)
	}
	for _, v := range st.env {
		texts = append(texts, v)
	}
	avail := slices.Clone(alwaysPlaceholders)
	for _, s := range c.setups {
		avail = append(avail, knownSetups[s]...)
	}
	for _, t := range texts {
		for _, m := range placeholderRe.FindAllStringSubmatch(t, -1) {
			if !slices.Contains(avail, m[1]) {
				return fmt.Errorf("placeholder {{%s}} is unknown or needs a `setup:` the case does not name (available: %s)", m[1], strings.Join(avail, ", "))
			}
		}
	}
	return nil
}

// substitute replaces {{NAME}} by vars[NAME].
func substitute(s string, vars map[string]string) string {
	return placeholderRe.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[2:len(m)-2]]; ok {
			return v
		}
		return m
	})
}

// testRequest builds a test step's ExecuteTestRequest with vars
// substituted (limits and env as request's).
func (st *step) testRequest(vars map[string]string) *sandboxv1.ExecuteTestRequest {
	req := st.request(vars)
	return &sandboxv1.ExecuteTestRequest{
		Code: ptr(req.GetCode()), Tests: substitute(st.tests, vars), Runtime: req.GetRuntime(),
		Limits: req.GetLimits(), TimeoutMs: req.TimeoutMs, RawOutput: true,
	}
}

// testResponse is a test step's response as an ExecuteResponse, for
// check: its state is COMPLETED for exit code 0, TIMEOUT or CANCELLED for
// those reasons, else FAILED.
func testResponse(r *sandboxv1.ExecuteTestResponse) *sandboxv1.ExecuteResponse {
	o := r.GetOutcome()
	state := sandboxv1.ExecutionState_EXECUTION_STATE_FAILED
	switch o.GetTerminationReason() {
	case sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT:
		state = sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT
	case sandboxv1.TerminationReason_TERMINATION_REASON_CANCELLED:
		state = sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED
	case sandboxv1.TerminationReason_TERMINATION_REASON_EXITED:
		if o.GetExitCode() == 0 {
			state = sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED
		}
	}
	return &sandboxv1.ExecuteResponse{State: state, Outcome: o, Output: r.GetOutput(), ErrorOutput: r.GetErrorOutput()}
}

// checkTests returns every way a test step's response misses the step's
// test expectations.
func (st *step) checkTests(r *sandboxv1.ExecuteTestResponse) []string {
	var bad []string
	e := st.expect
	if e.testSuccess != nil && r.GetSuccess() != *e.testSuccess {
		bad = append(bad, fmt.Sprintf("success %v, want %v", r.GetSuccess(), *e.testSuccess))
	}
	if w, g := e.testSummary, r.GetSummary(); w != nil &&
		(g.GetTotal() != w.Total || g.GetPassed() != w.Passed || g.GetFailed() != w.Failed || g.GetSkipped() != w.Skipped) {
		bad = append(bad, fmt.Sprintf("summary %v, want %v", g, w))
	}
	for _, w := range e.testErrorContains {
		if !strings.Contains(r.GetError(), w) {
			bad = append(bad, fmt.Sprintf("error %q does not contain %q", r.GetError(), w))
		}
	}
	return bad
}

// request builds the step's ExecuteRequest with vars substituted.
func (st *step) request(vars map[string]string) *sandboxv1.ExecuteRequest {
	req := &sandboxv1.ExecuteRequest{
		Source:    &sandboxv1.ExecuteRequest_Code{Code: substitute(st.code, vars)},
		Runtime:   knownRuntimes[st.runtime],
		RawOutput: true, // cases expect the program's own bytes
	}
	if len(st.limits) > 0 {
		req.Limits = &sandboxv1.ResourceLimits{}
		for k, v := range st.limits {
			knownLimits[k](req.Limits, v)
		}
		// A timeout the program must not reach (no TIMEOUT among the
		// expected states) is in the environment's time, and so is one
		// the program must reach only after writing what the case
		// expects of its output (starting a runtime and writing take
		// environment time: seconds for python in the cgroup v2 VM); a
		// timeout under test with nothing to reach first is not.
		if req.Limits.TimeoutMs > 0 && (!slices.Contains(st.expect.states, "TIMEOUT") || st.expect.expectsOutput()) {
			req.Limits.TimeoutMs *= testbin.TimeScale()
		}
	}
	if len(st.env) > 0 {
		req.Env = map[string]string{}
		for k, v := range st.env {
			req.Env[k] = substitute(v, vars)
		}
	}
	return req
}

// check returns every way resp misses the step's expectations.
func (st *step) check(resp *sandboxv1.ExecuteResponse, vars map[string]string) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	e := st.expect
	o := resp.GetOutcome()
	state := strings.TrimPrefix(resp.GetState().String(), "EXECUTION_STATE_")
	if !slices.Contains(e.states, state) {
		add("state %s, want %s", state, strings.Join(e.states, " or "))
	}
	reason := strings.TrimPrefix(o.GetTerminationReason().String(), "TERMINATION_REASON_")
	if len(e.reasons) > 0 && !slices.Contains(e.reasons, reason) {
		add("termination reason %s, want %s", reason, strings.Join(e.reasons, " or "))
	}
	if e.exitCode != nil && int64(o.GetExitCode()) != *e.exitCode {
		add("exit code %d, want %d", o.GetExitCode(), *e.exitCode)
	}
	if e.signal != nil && int64(o.GetSignal()) != *e.signal {
		add("signal %d, want %d", o.GetSignal(), *e.signal)
	}
	streams := []struct {
		name                  string
		text                  string
		contains, notContains []string
		matches               []string
		truncated             *bool
		gotTruncated          bool
		maxBytes              *int64
	}{
		{"stdout", resp.GetOutput(), e.stdoutContains, e.stdoutNotContains, e.stdoutMatches, e.stdoutTruncated, o.GetStdoutTruncated(), e.stdoutMaxBytes},
		{"stderr", resp.GetErrorOutput(), e.stderrContains, e.stderrNotContains, e.stderrMatches, e.stderrTruncated, o.GetStderrTruncated(), e.stderrMaxBytes},
	}
	for _, s := range streams {
		for _, w := range s.contains {
			if w = substitute(w, vars); !strings.Contains(s.text, w) {
				add("%s does not contain %q", s.name, w)
			}
		}
		for _, w := range s.notContains {
			if w = substitute(w, vars); strings.Contains(s.text, w) {
				add("%s contains %q", s.name, w)
			}
		}
		for _, w := range s.matches {
			w = substitute(w, vars)
			re, err := regexp.Compile(w)
			if err != nil {
				add("%s pattern %q after substitution: %v", s.name, w, err)
				continue
			}
			if !re.MatchString(s.text) {
				add("%s does not match %q", s.name, w)
			}
		}
		if s.truncated != nil && s.gotTruncated != *s.truncated {
			add("%s_truncated %v, want %v", s.name, s.gotTruncated, *s.truncated)
		}
		if s.maxBytes != nil && int64(len(s.text)) > *s.maxBytes {
			add("%s holds %d bytes, want at most %d", s.name, len(s.text), *s.maxBytes)
		}
	}
	u := o.GetUsage()
	if e.wallMaxMs != nil && u.GetWallMs() > *e.wallMaxMs*testbin.TimeScale() {
		add("wall %d ms, want at most %d (%d × %s)", u.GetWallMs(), *e.wallMaxMs*testbin.TimeScale(), *e.wallMaxMs, testbin.TimeScaleEnv)
	}
	if e.cpuMaxPercent != nil {
		cpuUs := u.GetCpuUserUs() + u.GetCpuSystemUs()
		switch {
		case u.GetWallMs() <= 0:
			add("cpu check: no wall time in the outcome")
		case cpuUs/10/u.GetWallMs() > *e.cpuMaxPercent:
			add("cpu %d µs over %d ms wall = %d%%, want at most %d%%", cpuUs, u.GetWallMs(), cpuUs/10/u.GetWallMs(), *e.cpuMaxPercent)
		}
	}
	if e.pidsPeakMax != nil && u.GetPidsPeak() > *e.pidsPeakMax {
		add("pids peak %d, want at most %d", u.GetPidsPeak(), *e.pidsPeakMax)
	}
	return bad
}

func setInt(dst **int64, val string) error {
	n, err := parseSize(val)
	if err != nil {
		return err
	}
	*dst = &n
	return nil
}

func setBool(dst **bool, val string) error {
	b, err := strconv.ParseBool(val)
	if err != nil {
		return err
	}
	*dst = &b
	return nil
}

// parseSize parses an integer with an optional binary suffix Ki, Mi or Gi.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer: %w", s, err)
	}
	return n * mult, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// describe renders a response for failure messages, output shortened.
func describe(r *sandboxv1.ExecuteResponse) string {
	o := r.GetOutcome()
	u := o.GetUsage()
	return fmt.Sprintf("state %s reason %s exit %d signal %d error %q\n  usage: wall %d ms, cpu user %d µs system %d µs, peak memory %d, pids peak %d, oom kills %d; truncated stdout %v stderr %v; sandbox %s\n  stdout %q\n  stderr %q",
		r.GetState(), o.GetTerminationReason(), o.GetExitCode(), o.GetSignal(), r.GetError(),
		u.GetWallMs(), u.GetCpuUserUs(), u.GetCpuSystemUs(), u.GetPeakMemoryBytes(), u.GetPidsPeak(), u.GetOomKills(),
		o.GetStdoutTruncated(), o.GetStderrTruncated(), o.GetSandboxId(), shorten(r.GetOutput()), shorten(r.GetErrorOutput()))
}

func shorten(s string) string {
	if len(s) > 1500 {
		return s[:700] + fmt.Sprintf(" …[%d bytes]… ", len(s)-1400) + s[len(s)-700:]
	}
	return s
}

func ptr[T any](v T) *T { return &v }
