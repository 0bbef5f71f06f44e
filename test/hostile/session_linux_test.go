//go:build linux

package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// A session case (`session: true`) runs its steps in one session sandbox
// of the suite's supervisor, through its public API
// (execfarm.v1.SessionService): exec steps as Exec calls, file steps as
// its file calls. The sandbox is created with the first step's limits and
// deleted after the last step.

// runSession runs c's steps in one session sandbox, then deletes it and
// checks that nothing of it or of the case's marker remains.
func (s *suite) runSession(t *testing.T, c *caseFile, vars map[string]string, secrets []string) {
	sessions := execfarmv1.NewSessionServiceClient(s.conn)
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
	sb, err := sessions.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{Limits: resourceLimits(c.steps[0].limits)})
	cancel()
	if err != nil {
		t.Fatalf("create the session sandbox: %v%s", err, s.logTail())
	}
	id := sb.GetSandboxId()
	box := s.boxOf(id)
	if box == "" {
		t.Errorf("the supervisor's log does not say which sandbox serves session %s", id)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
		defer cancel()
		if _, err := sessions.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: id}); err != nil {
			t.Errorf("delete the session sandbox: %v", err)
		}
		for _, l := range s.sandboxLeftovers(s.stateDir, box) {
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
			got, bad = fileStep(sessions, id, st, vars)
		} else {
			got, bad = execStep(sessions, id, st, vars)
		}
		for _, sec := range secrets {
			if strings.Contains(got, sec) {
				bad = append(bad, "the result holds the host marker file's content")
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s:\n  - %s\n  got: %s%s", label, strings.Join(bad, "\n  - "), got, s.logAbout(box))
		} else {
			t.Logf("%s: as expected: %s", label, got)
		}
	}
}

// boxOf returns the id of the sandbox ("sb-" and 16 hex digits: its
// cgroup's and state directory's name) that serves session sandbox id,
// from the line the supervisor logs when it creates one.
func (s *suite) boxOf(id string) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`sandbox=` + regexp.QuoteMeta(id) + ` box=(sb-[0-9a-f]{16})`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// resourceLimits is a step's `limits:` as the API's message.
func resourceLimits(l map[string]int64) *sandboxv1.ResourceLimits {
	out := &sandboxv1.ResourceLimits{}
	for k, v := range l {
		knownLimits[k](out, v)
	}
	return out
}

// execStep runs an exec step through Exec and checks its result as an
// Execute response's. The step's timeout_ms is the exec's; one the
// program must not reach (no TIMEOUT expected) is in the environment's
// time.
func execStep(c execfarmv1.SessionServiceClient, id string, st *step, vars map[string]string) (string, []string) {
	req := &execfarmv1.ExecRequest{SandboxId: id, Code: substitute(st.code, vars), Runtime: knownRuntimes[st.runtime]}
	if ms, ok := st.limits["timeout_ms"]; ok {
		// The rule of step.request: a timeout under test is in the
		// environment's time only when the program must write what the
		// case expects before it.
		if !slices.Contains(st.expect.states, "TIMEOUT") || st.expect.expectsOutput() {
			ms *= testbin.TimeScale()
		}
		req.TimeoutMs = &ms
	}
	if len(st.env) > 0 {
		req.Env = map[string]string{}
		for k, v := range st.env {
			req.Env[k] = substitute(v, vars)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(2*time.Minute))
	defer cancel()
	stream, err := c.Exec(ctx, req)
	if err != nil {
		return "", []string{"exec: " + err.Error()}
	}
	var out, errOut bytes.Buffer
	const keep = 1 << 20
	var res *sandboxv1.ExecuteResult
	for res == nil {
		chunk, err := stream.Recv()
		if err != nil {
			return "", []string{fmt.Sprintf("exec: the stream ended before the result: %v (stdout %q)", err, shorten(out.String()))}
		}
		if b := chunk.GetStdout(); out.Len() < keep {
			out.Write(b)
		}
		if b := chunk.GetStderr(); errOut.Len() < keep {
			errOut.Write(b)
		}
		res = chunk.GetResult()
	}
	resp := &sandboxv1.ExecuteResponse{
		Success: res.GetSuccess(), Output: out.String(), ErrorOutput: errOut.String(), Error: res.Error,
		ExecutionTimeMs: res.GetExecutionTimeMs(), State: res.GetState(), Outcome: res.GetOutcome(),
	}
	return describe(resp), st.check(resp, vars)
}

// fileStep runs a file step through the service's file calls and checks
// its outcome: "ok" or the call's gRPC code, the content of a download,
// listing or stat, and a stat's existence.
func fileStep(c execfarmv1.SessionServiceClient, id string, st *step, vars map[string]string) (string, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
	defer cancel()
	path := substitute(st.file.path, vars)
	var content string
	var exists *bool
	var err error
	switch st.file.op {
	case "upload":
		err = upload(ctx, c, id, path, strings.NewReader(substitute(st.file.arg, vars)))
	case "upload-zeros":
		n, _ := parseSize(st.file.arg)
		err = upload(ctx, c, id, path, io.LimitReader(zeros{}, n))
	case "download":
		content, err = download(ctx, c, id, path)
	case "stat":
		var resp *execfarmv1.StatFileResponse
		if resp, err = c.StatFile(ctx, &execfarmv1.StatFileRequest{SandboxId: id, Path: path}); err == nil {
			ok := resp.GetExists()
			exists = &ok
			if ok {
				fi := resp.GetInfo()
				content = fmt.Sprintf("%s %04o %s", fileType(fi.GetType()), fi.GetMode(), fi.GetLinkTarget())
			}
		}
	case "list":
		var resp *execfarmv1.ListFilesResponse
		if resp, err = c.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: id, Path: path}); err == nil {
			for _, e := range resp.GetEntries() {
				content += fmt.Sprintf("%s %s\n", e.GetName(), fileType(e.GetType()))
			}
		}
	case "remove", "remove-recursive":
		_, err = c.RemoveFile(ctx, &execfarmv1.RemoveFileRequest{SandboxId: id, Path: path, Recursive: st.file.op == "remove-recursive"})
	case "mkdir":
		_, err = c.MakeDirectory(ctx, &execfarmv1.MakeDirectoryRequest{SandboxId: id, Path: path, Parents: true})
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

// upload streams r to path of sandbox id through UploadFile.
func upload(ctx context.Context, c execfarmv1.SessionServiceClient, id, path string, r io.Reader) error {
	st, err := c.UploadFile(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{
		Header: &execfarmv1.UploadFileHeader{SandboxId: id, Path: path}}}); err != nil {
		_, err = st.CloseAndRecv()
		return err
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Data{Data: buf[:n]}}); err != nil {
				_, err = st.CloseAndRecv() // the server's reason
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// download reads path of sandbox id through DownloadFile, at most 1 MiB
// of it.
func download(ctx context.Context, c execfarmv1.SessionServiceClient, id, path string) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: id, Path: path})
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for b.Len() < 1<<20 {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return b.String(), err
		}
		b.Write(m.GetData())
	}
	return b.String(), nil
}

// fileType is the word the cases use for a FileType: its name without
// the prefix, in lower case ("file", "directory", "symlink", "other").
func fileType(t execfarmv1.FileType) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "FILE_TYPE_"))
}

// codeOf is the gRPC code of a call's error as the cases write it
// ("NOT_FOUND"), "ok" for none; an error that is no gRPC status is
// "unexpected error".
func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := status.FromError(err)
	if !ok {
		return "unexpected error"
	}
	switch st.Code() {
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	}
	return st.Code().String()
}

// zeros reads as zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
