//go:build linux

package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// A session case (`session: true`) runs its steps in one session sandbox:
// exec steps as execs in it, file steps as file operations on it. The
// sandbox is started through the supervisor's sandbox mechanism
// (supervisor/sandbox, with the supervisor's own configuration and uid
// pool), which the public session API drives; when the API serves file
// operations, the driver below is the one thing to switch.

// runSession runs c's steps in one session sandbox, then closes it and
// checks that nothing of it or of the case's marker remains.
func (s *suite) runSession(t *testing.T, c *caseFile, vars map[string]string, secrets []string) {
	first := c.steps[0]
	set, err := limits.Resolve(resourceLimits(first.limits), nil, limits.Default(), limits.DefaultCeilings())
	if err != nil {
		t.Fatalf("limits: %v", err)
	}
	spec := set.Spec()
	spec.Session = true
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
	sb, err := sandbox.Start(ctx, &s.sandboxes, spec)
	cancel()
	if err != nil {
		t.Fatalf("start the session sandbox: %v%s", err, s.logTail())
	}
	id := sb.ID()
	defer func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close the session sandbox: %v", err)
		}
		for _, l := range s.sandboxLeftovers(s.stateDir, id) {
			t.Errorf("left on the host after the session: %s", l)
		}
		for _, p := range hostscan.WithMarker(vars["MARKER"]) {
			t.Errorf("host process with the case's marker survived the session: %s", p)
		}
	}()
	for i, st := range c.steps {
		label := fmt.Sprintf("step %d (line %d)", i+1, st.line)
		var got string
		var bad []string
		if st.file != nil {
			got, bad = fileStep(sb, st, vars)
		} else {
			got, bad = execStep(sb, st, set, vars)
		}
		for _, sec := range secrets {
			if strings.Contains(got, sec) {
				bad = append(bad, "the result holds the host marker file's content")
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s:\n  - %s\n  got: %s%s", label, strings.Join(bad, "\n  - "), got, s.logAbout(id))
		} else {
			t.Logf("%s: as expected: %s", label, got)
		}
	}
}

// resourceLimits is a step's `limits:` as the API's message.
func resourceLimits(l map[string]int64) *sandboxv1.ResourceLimits {
	out := &sandboxv1.ResourceLimits{}
	for k, v := range l {
		knownLimits[k](out, v)
	}
	return out
}

// execStep runs an exec step and checks it as an Execute response:
// COMPLETED on exit 0, TIMEOUT when its timeout killed it, else FAILED.
func execStep(sb *sandbox.Sandbox, st *step, set limits.Set, vars map[string]string) (string, []string) {
	env := map[string]string{}
	for k, v := range st.env {
		env[k] = substitute(v, vars)
	}
	req, err := program.Build(program.Input{Runtime: st.runtime, Code: substitute(st.code, vars), Env: env})
	if err != nil {
		return "", []string{"build the exec: " + err.Error()}
	}
	req.Rlimits = set.Rlimits()
	timeout := time.Duration(set.TimeoutMs) * time.Millisecond
	if ms, ok := st.limits["timeout_ms"]; ok {
		timeout = time.Duration(ms) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	began := time.Now()
	e, err := sb.Exec(ctx, sandbox.ExecRequest{Run: req})
	if err != nil {
		return "", []string{"exec: " + err.Error()}
	}
	var out, errOut bytes.Buffer
	const keep = 1 << 20
	exit, err := e.Wait(func(ev *workerv1.RunEvent) {
		if b := ev.GetStdout(); out.Len() < keep {
			out.Write(b)
		}
		if b := ev.GetStderr(); errOut.Len() < keep {
			errOut.Write(b)
		}
	})
	if err != nil {
		return "", []string{"wait: " + err.Error()}
	}
	u := e.Usage()
	resp := &sandboxv1.ExecuteResponse{
		State:       sandboxv1.ExecutionState_EXECUTION_STATE_FAILED,
		Output:      out.String(),
		ErrorOutput: errOut.String(),
		Outcome: &sandboxv1.ExecutionOutcome{
			TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED,
			ExitCode:          exit.GetExitCode(),
			Signal:            exit.GetSignal(),
			Usage: &sandboxv1.ResourceUsage{
				WallMs: time.Since(began).Milliseconds(), CpuUserUs: u.CPUUserMicros, CpuSystemUs: u.CPUSystemMicros, PidsPeak: u.PidsPeak,
			},
			SandboxId: sb.ID(),
		},
	}
	switch {
	case ctx.Err() != nil:
		resp.State = sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT
		resp.Outcome.TerminationReason = sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT
	case exit.GetStartError() != "":
		resp.Outcome.TerminationReason = sandboxv1.TerminationReason_TERMINATION_REASON_INTERNAL
		msg := exit.GetStartError()
		resp.Error = &msg
	case exit.GetSignal() != 0:
		resp.Outcome.TerminationReason = sandboxv1.TerminationReason_TERMINATION_REASON_SIGNAL
	case exit.GetExitCode() == 0:
		resp.State = sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED
		resp.Success = true
	}
	return describe(resp), st.check(resp, vars)
}

// fileStep runs a file step and checks its outcome: "ok" or the gRPC code
// the public API gives its error, the content of a download, listing or
// stat, and a stat's existence.
func fileStep(sb *sandbox.Sandbox, st *step, vars map[string]string) (string, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
	defer cancel()
	path := substitute(st.file.path, vars)
	var content string
	var exists *bool
	var err error
	switch st.file.op {
	case "upload":
		_, err = sb.Upload(ctx, path, 0, strings.NewReader(substitute(st.file.arg, vars)))
	case "upload-zeros":
		n, _ := parseSize(st.file.arg)
		_, err = sb.Upload(ctx, path, 0, io.LimitReader(zeros{}, n))
	case "download":
		var r *sandbox.FileReader
		if r, err = sb.Download(ctx, path); err == nil {
			var b bytes.Buffer
			_, err = io.Copy(&b, io.LimitReader(r, 1<<20))
			r.Close()
			content = b.String()
		}
	case "stat":
		var fi sandbox.FileInfo
		var ok bool
		if fi, ok, err = sb.Stat(ctx, path); err == nil {
			exists = &ok
			if ok {
				content = fmt.Sprintf("%s %04o %s", fi.Type, fi.Mode, fi.SymlinkTarget)
			}
		}
	case "list":
		var l sandbox.Listing
		if l, err = sb.List(ctx, path, 0); err == nil {
			for _, e := range l.Entries {
				content += fmt.Sprintf("%s %s\n", e.Name, e.Type)
			}
		}
	case "remove", "remove-recursive":
		err = sb.Remove(ctx, path, st.file.op == "remove-recursive")
	case "mkdir":
		err = sb.Mkdir(ctx, path, 0, true)
	}
	outcome := codeOf(err)
	got := fmt.Sprintf("%s %s: %s (err %v) content %q", st.file.op, path, outcome, err, shorten(content))
	var bad []string
	e := st.expect
	if outcome != e.file {
		bad = append(bad, fmt.Sprintf("outcome %s, want %s", outcome, e.file))
	}
	for _, w := range e.contentContains {
		if w = substitute(w, vars); !strings.Contains(content, w) {
			bad = append(bad, fmt.Sprintf("content does not contain %q", w))
		}
	}
	for _, w := range e.contentNotContains {
		if w = substitute(w, vars); strings.Contains(content, w) {
			bad = append(bad, fmt.Sprintf("content contains %q", w))
		}
	}
	if e.exists != nil && (exists == nil || *exists != *e.exists) {
		bad = append(bad, fmt.Sprintf("exists %v, want %v", exists, *e.exists))
	}
	return got, bad
}

// codeOf is the gRPC code the public API gives a mechanism's error (the
// status each sentinel of supervisor/sandbox names), "ok" for none.
func codeOf(err error) string {
	for _, c := range []struct {
		err  error
		code string
	}{
		{sandbox.ErrNotExist, "NOT_FOUND"},
		{sandbox.ErrExist, "ALREADY_EXISTS"},
		{sandbox.ErrPermission, "PERMISSION_DENIED"},
		{sandbox.ErrInvalidPath, "INVALID_ARGUMENT"},
		{sandbox.ErrNoSpace, "RESOURCE_EXHAUSTED"},
		{sandbox.ErrNotDirectory, "FAILED_PRECONDITION"},
		{sandbox.ErrIsDirectory, "FAILED_PRECONDITION"},
		{sandbox.ErrNotEmpty, "FAILED_PRECONDITION"},
		{sandbox.ErrNotRegular, "FAILED_PRECONDITION"},
		{sandbox.ErrBusy, "FAILED_PRECONDITION"},
	} {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	if err != nil {
		return "unexpected error"
	}
	return "ok"
}

// zeros reads as zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
