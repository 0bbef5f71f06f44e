//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/hostscan"
	"github.com/execfarm/execfarm/test/testbin"
)

// Session instances take the window's slots from sessionSlot on; the
// shared supervisor has [0, sharedSlots). Tests run one at a time, and
// each stops its instance, so instances of different tests may share
// slots.
const (
	sessionSlot  = sharedSlots
	sessionSlots = uidSlots - sharedSlots
)

// The principals of session instances: their tokens' names.
var sessionTokens = map[string]string{
	"alice": "alice-token-0123456789abcdef",
	"bob":   "bob-token-0123456789abcdef01",
}

// sessionInstance is a supervisor whose callers are named by bearer
// tokens, with a session client and an execution client per principal.
type sessionInstance struct {
	*instance
	sessions map[string]execfarmv1.SessionServiceClient
	execs    map[string]sandboxv1.SandboxServiceClient
}

// startSessionInstance starts a supervisor with the token file of
// sessionTokens, maxSandboxes session sandboxes at most (any principal may
// hold all of them, unless an opt says otherwise) and 4 execution slots, on
// the session slots; it is stopped, and checked to have left
// nothing, when the test ends.
func startSessionInstance(t *testing.T, name string, maxSandboxes int, opts ...func(*supervisor.Config)) *sessionInstance {
	t.Helper()
	requireSandbox(t)
	dir := filepath.Join(host.dir, name+"-tokens")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tokens")
	var b strings.Builder
	for who, tok := range sessionTokens {
		fmt.Fprintf(&b, "%s %s\n", who, tok)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	opts = append([]func(*supervisor.Config){func(c *supervisor.Config) {
		c.Sessions.MaxSandboxes, c.Sessions.MaxPerPrincipal = maxSandboxes, maxSandboxes
	}}, opts...)
	in, err := startInstanceOn(name, sessionSlot, sessionSlots, 4, 5*time.Second, func(tc *transport.Config) { tc.TokenPath = file }, opts...)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	si := &sessionInstance{instance: in, sessions: map[string]execfarmv1.SessionServiceClient{}, execs: map[string]sandboxv1.SandboxServiceClient{}}
	for who, tok := range sessionTokens {
		c := in.tc
		c.TokenPath, c.Token = "", tok
		conn, err := c.Dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		si.sessions[who] = execfarmv1.NewSessionServiceClient(conn)
		si.execs[who] = sandboxv1.NewSandboxServiceClient(conn)
	}
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
		if l := leftovers(in); len(l) > 0 {
			t.Errorf("leftovers after %s stopped:\n%s", name, strings.Join(l, "\n"))
		}
	})
	return si
}

// create creates a sandbox as who and returns its id.
func (si *sessionInstance) create(t *testing.T, who string, req *execfarmv1.CreateSandboxRequest) string {
	t.Helper()
	sb, err := si.sessions[who].CreateSandbox(callCtx(t), req)
	if err != nil {
		t.Fatalf("CreateSandbox as %s: %v", who, err)
	}
	if !sb.GetReady() || sb.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_READY || sb.GetOwner() != "token:"+who {
		t.Fatalf("new sandbox %v", sb)
	}
	return sb.GetSandboxId()
}

// execResult is an exec as Exec streamed it.
type execResult struct {
	id             string
	stdout, stderr string
	result         *sandboxv1.ExecuteResult
}

// exec runs code (shell) in sandbox id as who, through Exec, and returns
// what it streamed; an RPC error is returned, not fatal.
func (si *sessionInstance) exec(t *testing.T, who, id, code string) (execResult, error) {
	t.Helper()
	return si.execRequest(t, who, &execfarmv1.ExecRequest{SandboxId: id, Code: code})
}

// execRequest is exec of a whole request.
func (si *sessionInstance) execRequest(t *testing.T, who string, req *execfarmv1.ExecRequest) (execResult, error) {
	t.Helper()
	st, err := si.sessions[who].Exec(callCtx(t), req)
	if err != nil {
		return execResult{}, err
	}
	var r execResult
	for {
		c, err := st.Recv()
		if err != nil {
			return r, err
		}
		r.id = c.GetExecutionId()
		switch x := c.GetChunk().(type) {
		case *execfarmv1.ExecChunk_Stdout:
			r.stdout += string(x.Stdout)
		case *execfarmv1.ExecChunk_Stderr:
			r.stderr += string(x.Stderr)
		case *execfarmv1.ExecChunk_Result:
			r.result = x.Result
			return r, nil
		}
	}
}

// mustExec is exec, failing the test unless the exec completed.
func (si *sessionInstance) mustExec(t *testing.T, who, id, code string) execResult {
	t.Helper()
	r, err := si.exec(t, who, id, code)
	if err != nil {
		t.Fatalf("Exec(%q) as %s: %v", code, who, err)
	}
	if !r.result.GetSuccess() {
		t.Fatalf("Exec(%q) as %s: %v, stdout %q stderr %q", code, who, r.result, r.stdout, r.stderr)
	}
	return r
}

// hostUIDOf reads a sandbox's host uid range from inside it (its
// /proc/self/uid_map: "0 HOSTUID 65536").
func (si *sessionInstance) hostUIDOf(t *testing.T, who, id string) uint32 {
	t.Helper()
	f := strings.Fields(si.mustExec(t, who, id, "cat /proc/self/uid_map").stdout)
	if len(f) != 3 || f[0] != "0" {
		t.Fatalf("uid_map %q", f)
	}
	u, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(u)
}

// TestSessionSandboxIdlesAtBackgroundCPUWeight: a session sandbox with
// no exec running holds the background CPU weight, so that what its execs
// left running (a daemon here) competes with running executions at a
// tenth of their weight; while an exec runs, the sandbox has the default.
func TestSessionSandboxIdlesAtBackgroundCPUWeight(t *testing.T) {
	si := startSessionInstance(t, "sessweight", 2)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Runtime: sandboxv1.Runtime_RUNTIME_SHELL})
	low, normal := cpuWeightValues()
	// only returns the weight of the instance's one sandbox cgroup.
	only := func() string {
		t.Helper()
		w := sandboxCPUWeights()
		if len(w) != 1 {
			t.Fatalf("sandbox cgroups with a CPU weight: %v, want the session's one", w)
		}
		for _, v := range w {
			return v
		}
		return ""
	}
	if w := only(); w != low {
		t.Errorf("new session sandbox: CPU weight %s, want %s (no exec runs)", w, low)
	}
	// The first exec waits for a file that a third exec creates, then
	// leaves a daemon: the weight is the default while any runs.
	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	st, err := si.sessions["alice"].Exec(ctx, &execfarmv1.ExecRequest{SandboxId: id,
		Code: "echo started; while [ ! -e go ]; do sleep 0.01; done; setsid sleep 600 </dev/null >/dev/null 2>&1 & echo daemon"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout string
	for !strings.Contains(stdout, "started") {
		c, err := st.Recv()
		if err != nil {
			t.Fatalf("first exec, before it printed: %v", err)
		}
		stdout += string(c.GetStdout())
	}
	if w := only(); w != normal {
		t.Errorf("while an exec runs: CPU weight %s, want %s", w, normal)
	}
	si.mustExec(t, "alice", id, "true") // the first still waits: no file go yet
	if w := only(); w != normal {
		t.Errorf("after a second exec, while the first still runs: CPU weight %s, want %s", w, normal)
	}
	si.mustExec(t, "alice", id, "touch go")
	for {
		c, err := st.Recv()
		if err != nil {
			t.Fatalf("first exec: %v (stdout %q)", err, stdout)
		}
		stdout += string(c.GetStdout())
		if r := c.GetResult(); r != nil {
			if !r.GetSuccess() || !strings.Contains(stdout, "daemon") {
				t.Fatalf("first exec: %v, stdout %q", r, stdout)
			}
			break
		}
	}
	// Both results are published after their execs left the sandbox.
	if w := only(); w != low {
		t.Errorf("no exec runs, a daemon does: CPU weight %s, want %s", w, low)
	}
	if r := si.mustExec(t, "alice", id, "pgrep -x sleep >/dev/null && echo alive"); !strings.Contains(r.stdout, "alive") {
		t.Errorf("the daemon is gone: %q", r.stdout)
	}
}

// TestSessionExecsShareTheSandbox: a file one exec writes (in
// /workspace, the working directory) the next reads; every exec is an
// execution of the registry, tied to its sandbox: GetExecution and
// ListExecutions (filtered by the sandbox) show it, with its result.
func TestSessionExecsShareTheSandbox(t *testing.T) {
	si := startSessionInstance(t, "sess-share", 4)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Labels: map[string]string{"case": "share"}})
	first := si.mustExec(t, "alice", id, "pwd; echo 'kept between execs' > note.txt; mkdir -p d && echo deep > d/f")
	if first.stdout != "/workspace\n" {
		t.Fatalf("first exec's working directory %q", first.stdout)
	}
	second := si.mustExec(t, "alice", id, "cat note.txt d/f")
	if second.stdout != "kept between execs\ndeep\n" {
		t.Fatalf("second exec read %q", second.stdout)
	}
	ctx := callCtx(t)
	// A workdir that is no directory in the sandbox is the caller's
	// mistake: INVALID_ARGUMENT, no exec (it ended FAILED internal).
	si.mustExec(t, "alice", id, "ln -s d/f lnk && ln -s /nonexistent dangling && ln -s ../workspace/d dl")
	for _, wd := range []string{"nope/x", "d/f", "lnk", "dangling"} {
		_, err := si.sessions["alice"].ExecAsync(ctx, &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Workdir: wd})
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "workdir") {
			t.Errorf("exec in workdir %s: %v", wd, st)
		}
	}
	// A NUL byte where the exec's start needs a C string (code, which
	// is /bin/sh's argument; workdir; env) is INVALID_ARGUMENT naming the
	// field, no exec: code with one ended FAILED internal, "start
	// /bin/sh: invalid argument" (red-team pass).
	for _, tc := range []struct {
		field string
		req   *execfarmv1.ExecRequest
	}{
		{"code", &execfarmv1.ExecRequest{SandboxId: id, Code: "echo a\x00b"}},
		{"code", &execfarmv1.ExecRequest{SandboxId: id, Code: "print(1)\x00", Runtime: sandboxv1.Runtime_RUNTIME_PYTHON}},
		{"workdir", &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Workdir: "d\x00"}},
		{"env", &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Env: map[string]string{"A": "a\x00b"}}},
	} {
		_, err := si.sessions["alice"].ExecAsync(ctx, tc.req)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || badField(err) != tc.field {
			t.Errorf("exec with a NUL byte in %s: %v (field %q), want INVALID_ARGUMENT naming it", tc.field, st, badField(err))
		}
	}
	if r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Workdir: "d"}); err != nil || r.stdout != "/workspace/d\n" {
		t.Errorf("exec in workdir d: pwd %q, %v", r.stdout, err)
	}
	if r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: "cat f", Workdir: "dl"}); err != nil || r.stdout != "deep\n" {
		t.Errorf("exec in workdir dl, a link to d: %q, %v", r.stdout, err)
	}
	got, err := si.execs["alice"].GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: second.id})
	if err != nil || got.GetOutput() != second.stdout || got.GetResult().GetOutcome().GetSandboxId() != id {
		t.Fatalf("GetExecution of the exec: %v, %v", got, err)
	}
	l, err := si.execs["alice"].ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{SandboxId: id})
	if err != nil || len(l.GetExecutions()) != 5 { // the refused ones are none
		t.Fatalf("ListExecutions of the sandbox: %v, %v", l, err)
	}
	for _, e := range l.GetExecutions() {
		if e.GetSandboxId() != id || e.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || e.GetRuntime() != sandboxv1.Runtime_RUNTIME_SHELL {
			t.Errorf("listed exec %v", e)
		}
	}
	sb, err := si.sessions["alice"].GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id})
	if err != nil || !sb.GetReady() || sb.GetNextEventOffset() < 1+2*3 || sb.GetUsage().GetCpuUserUs()+sb.GetUsage().GetCpuSystemUs() == 0 ||
		sb.GetExpiresAtMs()-sb.GetCreatedAtMs() != 300_000 || sb.GetLabels()["case"] != "share" {
		t.Fatalf("GetSandbox: %v, %v", sb, err)
	}
	// A workdir the sandbox user may not enter (the worker's root, through
	// /proc) is the caller's mistake too, found only at the start: the
	// exec fails as a shell's command that cannot run (126), not as
	// execfarm's failure (it ended FAILED internal; red-team pass).
	r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Workdir: "/proc/1/root"})
	o := r.result.GetOutcome()
	if err != nil || r.result.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_FAILED ||
		o.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_EXITED || o.GetExitCode() != 126 ||
		!strings.Contains(r.result.GetError(), "permission denied") {
		t.Errorf("exec in workdir /proc/1/root: %v, %v; want FAILED, exited 126, permission denied", r.result, err)
	}
}

// TestSessionWorkdirRemovedBeforeTheStart: an exec whose workdir the
// sandbox's own processes remove and make again in a loop is refused
// (INVALID_ARGUMENT, workdir), runs in it, or, gone between the check and
// the start, fails as the caller's (FAILED exited 126) naming the
// directory; it never ends FAILED internal (it did in 21 of 80 tries,
// "start /bin/sh: no such file or directory"; red-team pass).
func TestSessionWorkdirRemovedBeforeTheStart(t *testing.T) {
	si := startSessionInstance(t, "sess-workdir", 2)
	ctx := callCtx(t)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	flap, err := si.sessions["alice"].ExecAsync(ctx, &execfarmv1.ExecRequest{SandboxId: id, Code: "while :; do mkdir flap; rmdir flap; done"})
	if err != nil {
		t.Fatal(err)
	}
	var refused, ran, gone int
	for i := range 80 {
		r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: "pwd", Workdir: "flap"})
		o := r.result.GetOutcome()
		switch {
		case err != nil:
			if st := status.Convert(err); st.Code() != codes.InvalidArgument || badField(err) != "workdir" {
				t.Fatalf("exec %d: %v, want INVALID_ARGUMENT naming workdir", i, err)
			}
			refused++
		case r.result.GetSuccess():
			ran++
		case r.result.GetState() == sandboxv1.ExecutionState_EXECUTION_STATE_FAILED &&
			o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED && o.GetExitCode() == 126 &&
			strings.Contains(r.result.GetError(), "working directory /workspace/flap: no such file or directory"):
			gone++
		case r.result.GetState() == sandboxv1.ExecutionState_EXECUTION_STATE_FAILED &&
			o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED && o.GetExitCode() != 126:
			ran++ // started in it, and then pwd found it gone
		default:
			t.Fatalf("exec %d in a workdir removed and made in a loop: %v, stdout %q stderr %q", i, r.result, r.stdout, r.stderr)
		}
	}
	t.Logf("80 execs: %d refused, %d ran, %d found it gone at the start", refused, ran, gone)
	if _, err := si.execs["alice"].CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: flap.GetExecutionId()}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionPrincipalsAreIsolated: two principals' sandboxes see neither
// each other's files nor processes and run under different host uids;
// principal B cannot see, exec in, read the files or events of, or
// delete principal A's sandbox, nor see or cancel its execs: every call
// says NOT_FOUND, as for a sandbox that does not exist.
func TestSessionPrincipalsAreIsolated(t *testing.T) {
	si := startSessionInstance(t, "sess-owners", 4)
	a := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	b := si.create(t, "bob", &execfarmv1.CreateSandboxRequest{})
	si.mustExec(t, "alice", a, "echo alice > mine.txt")
	si.mustExec(t, "bob", b, "echo bob > mine.txt")
	// A process of alice's that lives on between her execs.
	si.mustExec(t, "alice", a, "setsid sleep 300 </dev/null >/dev/null 2>&1 &")
	if out := si.mustExec(t, "bob", b, "cat mine.txt; ls /workspace; ls /proc | grep -c '^[0-9]'").stdout; !strings.HasPrefix(out, "bob\nmine.txt\n") {
		t.Fatalf("bob's sandbox shows %q", out)
	}
	procs := si.mustExec(t, "bob", b, "for p in /proc/[0-9]*; do cat $p/cmdline | tr '\\0' ' '; echo; done").stdout
	if strings.Contains(procs, "sleep 300") {
		t.Fatalf("bob sees alice's process:\n%s", procs)
	}
	if ua, ub := si.hostUIDOf(t, "alice", a), si.hostUIDOf(t, "bob", b); ua == ub || ua < host.uidBase || ub < host.uidBase {
		t.Fatalf("host uids %d and %d", ua, ub)
	}
	// An exec of alice's that runs while bob tries her sandbox.
	running, err := si.sessions["alice"].ExecAsync(callCtx(t), &execfarmv1.ExecRequest{SandboxId: a, Code: "sleep 300"})
	if err != nil {
		t.Fatal(err)
	}

	ctx := callCtx(t)
	bob := si.sessions["bob"]
	notFound := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.NotFound {
			t.Errorf("bob's %s of alice's sandbox: %v, want NOT_FOUND", what, err)
		}
	}
	if sb, err := bob.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: a}); err != nil || sb.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND || sb.GetReady() {
		t.Errorf("bob's GetSandbox of alice's: %v, %v; want SandboxNotFound", sb, err)
	}
	if l, err := bob.ListSandboxes(ctx, &execfarmv1.ListSandboxesRequest{}); err != nil || len(l.GetSandboxes()) != 1 || l.GetSandboxes()[0].GetSandboxId() != b {
		t.Errorf("bob's list: %v, %v; want his sandbox only", l, err)
	}
	_, err = si.exec(t, "bob", a, "cat mine.txt")
	notFound("Exec", err)
	_, err = bob.ExecAsync(ctx, &execfarmv1.ExecRequest{SandboxId: a, Code: "true"})
	notFound("ExecAsync", err)
	dl, err := bob.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: a, Path: "mine.txt"})
	if err == nil {
		_, err = dl.Recv()
	}
	notFound("DownloadFile", err)
	_, err = bob.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: a, Path: "."})
	notFound("ListFiles", err)
	_, err = bob.StatFile(ctx, &execfarmv1.StatFileRequest{SandboxId: a, Path: "mine.txt"})
	notFound("StatFile", err)
	_, err = bob.RemoveFile(ctx, &execfarmv1.RemoveFileRequest{SandboxId: a, Path: "mine.txt"})
	notFound("RemoveFile", err)
	_, err = bob.MakeDirectory(ctx, &execfarmv1.MakeDirectoryRequest{SandboxId: a, Path: "x"})
	notFound("MakeDirectory", err)
	up, err := bob.UploadFile(ctx)
	if err == nil {
		_ = up.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{Header: &execfarmv1.UploadFileHeader{SandboxId: a, Path: "x"}}})
		_, err = up.CloseAndRecv()
	}
	notFound("UploadFile", err)
	_, err = bob.ReadEvents(ctx, &execfarmv1.ReadEventsRequest{SandboxId: a})
	notFound("ReadEvents", err)
	sub, err := bob.SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: a})
	if err == nil {
		_, err = sub.Recv()
	}
	notFound("SubscribeEvents", err)
	_, err = bob.WriteStdin(ctx, &execfarmv1.WriteStdinRequest{ExecutionId: running.GetExecutionId(), Data: []byte("x")})
	notFound("WriteStdin", err)
	_, err = bob.SignalExec(ctx, &execfarmv1.SignalExecRequest{ExecutionId: running.GetExecutionId(), Signal: 15})
	notFound("SignalExec", err)
	_, err = si.execs["bob"].GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: running.GetExecutionId()})
	notFound("GetExecution", err)
	_, err = si.execs["bob"].CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: running.GetExecutionId()})
	notFound("CancelExecution", err)
	if l, err := si.execs["bob"].ListExecutions(ctx, &sandboxv1.ListExecutionsRequest{}); err != nil || len(l.GetExecutions()) != 4 {
		t.Errorf("bob lists %d executions (%v), want his 4", len(l.GetExecutions()), err)
	}
	_, err = bob.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: a})
	notFound("DeleteSandbox", err)

	// Alice's sandbox and exec are untouched.
	if e, err := si.execs["alice"].GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: running.GetExecutionId()}); err != nil || e.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_RUNNING {
		t.Fatalf("alice's running exec: %v, %v", e, err)
	}
	if _, err := si.execs["alice"].CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: running.GetExecutionId()}); err != nil {
		t.Fatal(err)
	}
	if out := si.mustExec(t, "alice", a, "cat mine.txt").stdout; out != "alice\n" {
		t.Fatalf("alice's file now holds %q", out)
	}
	if e, err := si.execs["alice"].GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: running.GetExecutionId()}); err != nil || e.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED {
		t.Fatalf("alice's exec after her cancel: %v, %v; want CANCELLED", e, err)
	}
}

// TestSessionMaxSandboxes: with --max-sandboxes 5 the sixth create is
// RESOURCE_EXHAUSTED and names the limit; deleting one makes room.
func TestSessionMaxSandboxes(t *testing.T) {
	si := startSessionInstance(t, "sess-max", 5)
	var ids []string
	for i := range 5 {
		who := "alice"
		if i%2 == 1 {
			who = "bob"
		}
		ids = append(ids, si.create(t, who, &execfarmv1.CreateSandboxRequest{}))
	}
	_, err := si.sessions["alice"].CreateSandbox(callCtx(t), &execfarmv1.CreateSandboxRequest{})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "--max-sandboxes") {
		t.Fatalf("sixth create: %v, want RESOURCE_EXHAUSTED naming --max-sandboxes", err)
	}
	if _, err := si.sessions["alice"].DeleteSandbox(callCtx(t), &execfarmv1.DeleteSandboxRequest{SandboxId: ids[0]}); err != nil {
		t.Fatal(err)
	}
	si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
}

// TestSessionExpiry: a sandbox created with shutdown_after_seconds 2 is
// gone within 3 s: status SandboxNotFound, its processes and cgroup
// removed, and its log (followed by a subscriber from the start) ends
// with the expiry: expiring, its running exec's end (CANCELLED), then
// ended with reason expired.
func TestSessionExpiry(t *testing.T) {
	si := startSessionInstance(t, "sess-expiry", 4)
	ctx := callCtx(t)
	alice := si.sessions["alice"]
	// 2 s, and gone within 3 s, on the host. In the cgroup v2 VM the
	// create, the uid lookup (an exec) and the subscription alone take
	// seconds, so both scale with the environment there.
	ttl := int64(2 * testbin.TimeScale())
	created := time.Now()
	sb, err := alice.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{ShutdownAfterSeconds: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.GetSandboxId()
	if sb.GetExpiresAtMs()-sb.GetCreatedAtMs() != ttl*1000 {
		t.Fatalf("expires %d ms after creation, want %d", sb.GetExpiresAtMs()-sb.GetCreatedAtMs(), ttl*1000)
	}
	sub, err := alice.SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: id})
	if err != nil {
		t.Fatal(err)
	}
	uid := si.hostUIDOf(t, "alice", id)
	if _, err := alice.ExecAsync(ctx, &execfarmv1.ExecRequest{SandboxId: id, Code: "sleep 300"}); err != nil {
		t.Fatal(err)
	}
	// The instance's one sandbox: its cgroup, state directory and
	// processes are what leftovers finds now.
	if l := leftovers(si.instance); !slices.ContainsFunc(l, func(s string) bool { return strings.HasPrefix(s, "cgroup ") }) ||
		!slices.ContainsFunc(l, func(s string) bool { return strings.HasPrefix(s, "process ") }) {
		t.Fatalf("the live sandbox's cgroup or processes not found:\n%s", strings.Join(l, "\n"))
	}
	var events []*execfarmv1.SandboxEvent
	for {
		ev, err := sub.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("subscription: %v", err)
		}
		events = append(events, ev)
	}
	gone := time.Since(created)
	got, err := alice.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id})
	if err != nil || got.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND {
		t.Fatalf("GetSandbox after expiry: %v, %v", got, err)
	}
	if m := got.GetMessage(); !strings.Contains(m, "ended at") || !strings.Contains(m, "(expired: ") {
		t.Errorf("GetSandbox after expiry says %q, want when and why it ended", m)
	}
	if gone > testbin.Scaled(3*time.Second) {
		t.Fatalf("the sandbox ended %v after its creation, want within %v", gone, testbin.Scaled(3*time.Second))
	}
	if l := leftovers(si.instance); len(l) > 0 {
		t.Fatalf("left after expiry:\n%s", strings.Join(l, "\n"))
	}
	if procs := hostscan.InUIDWindow(uid, uid+rangeSize); len(procs) > 0 {
		t.Fatalf("processes left in the sandbox's uid range: %v", procs)
	}
	n := len(events)
	if n < 4 {
		t.Fatalf("%d events", n)
	}
	end, ended, expiring := events[n-1].GetEnded(), events[n-2].GetExecEnded(), events[n-3].GetExpiring()
	if end == nil || end.GetReason() != execfarmv1.EndReason_END_REASON_EXPIRED || end.GetCancelledExecs() != 1 ||
		ended == nil || ended.GetResult().GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED ||
		expiring == nil || expiring.GetReason() != execfarmv1.EndReason_END_REASON_EXPIRED {
		t.Fatalf("last events:\n%v\n%v\n%v", events[n-3], events[n-2], events[n-1])
	}
	t.Logf("gone %v after creation", gone)
}

// TestSessionEventsHistoryThenLive: a subscriber started at offset 0
// after three execs receives all their events in order (started, output,
// ended), then the next exec's events live; offsets increase by one
// without gaps. A page read agrees with the stream.
func TestSessionEventsHistoryThenLive(t *testing.T) {
	si := startSessionInstance(t, "sess-events", 4)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	var execIDs []string
	for i := range 3 {
		execIDs = append(execIDs, si.mustExec(t, "alice", id, fmt.Sprintf("echo out %d; echo err %d >&2", i, i)).id)
	}
	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	sub, err := si.sessions["alice"].SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: id})
	if err != nil {
		t.Fatal(err)
	}
	var events []*execfarmv1.SandboxEvent
	recv := func() *execfarmv1.SandboxEvent {
		t.Helper()
		ev, err := sub.Recv()
		if err != nil {
			t.Fatalf("subscription after %d events: %v", len(events), err)
		}
		if ev.GetOffset() != int64(len(events)) {
			t.Fatalf("event %d has offset %d", len(events), ev.GetOffset())
		}
		events = append(events, ev)
		return ev
	}
	if recv().GetReady() == nil {
		t.Fatal("first event is not ready")
	}
	// History: each exec's start, its output (stdout and stderr, in some
	// order of chunks), its end.
	execEvents := func(execID, want string) {
		t.Helper()
		if s := recv().GetExecStarted(); s.GetExecutionId() != execID {
			t.Fatalf("expected the start of %s, got %v", execID, events[len(events)-1])
		}
		var out, errOut string
		for {
			ev := recv()
			if o := ev.GetExecOutput(); o != nil {
				if o.GetExecutionId() != execID {
					t.Fatalf("output of another exec: %v", ev)
				}
				if o.GetStream() == execfarmv1.OutputStream_OUTPUT_STREAM_STDOUT {
					out += string(o.GetData())
				} else {
					errOut += string(o.GetData())
				}
				continue
			}
			e := ev.GetExecEnded()
			if e.GetExecutionId() != execID || e.GetResult().GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
				t.Fatalf("expected the end of %s, got %v", execID, ev)
			}
			break
		}
		if out != "out "+want+"\n" || errOut != "err "+want+"\n" {
			t.Fatalf("exec %s output %q, %q", execID, out, errOut)
		}
	}
	for i, e := range execIDs {
		execEvents(e, strconv.Itoa(i))
	}
	// Live.
	live := si.mustExec(t, "alice", id, "echo out 3; echo err 3 >&2")
	execEvents(live.id, "3")
	page, err := si.sessions["alice"].ReadEvents(callCtx(t), &execfarmv1.ReadEventsRequest{SandboxId: id, FromOffset: 1, MaxEvents: 1000})
	if err != nil || page.GetFirstOffset() != 0 || page.GetNextOffset() != int64(len(events)) || page.GetEnded() || len(page.GetEvents()) != len(events)-1 {
		t.Fatalf("ReadEvents: first %d next %d ended %v, %d events, %v", page.GetFirstOffset(), page.GetNextOffset(), page.GetEnded(), len(page.GetEvents()), err)
	}
	for i, ev := range page.GetEvents() {
		if ev.GetOffset() != int64(i+1) || ev.GetSandboxId() != id {
			t.Fatalf("paged event %d: %v", i, ev)
		}
	}
	_, err = si.sessions["alice"].ReadEvents(callCtx(t), &execfarmv1.ReadEventsRequest{SandboxId: id, FromOffset: int64(len(events)) + 5})
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("ReadEvents past the end: %v, want OUT_OF_RANGE", err)
	}
}

// TestSessionDeleteEndsEverything: deleting a sandbox with a running and
// a queued exec cancels both (CANCELLED), and once DeleteSandbox answers
// nothing of the sandbox is left: processes, cgroup, state directory.
func TestSessionDeleteEndsEverything(t *testing.T) {
	si := startSessionInstance(t, "sess-delete", 4)
	ctx := callCtx(t)
	alice := si.sessions["alice"]
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	uid := si.hostUIDOf(t, "alice", id)
	si.mustExec(t, "alice", id, "setsid sleep 300 </dev/null >/dev/null 2>&1 &")
	var execIDs []string
	for range 2 {
		r, err := alice.ExecAsync(ctx, &execfarmv1.ExecRequest{SandboxId: id, Code: "sleep 300"})
		if err != nil {
			t.Fatal(err)
		}
		execIDs = append(execIDs, r.GetExecutionId())
	}
	resp, err := alice.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: id})
	if err != nil || resp.GetCancelledExecs() != 2 {
		t.Fatalf("DeleteSandbox = %v, %v; want 2 cancelled", resp, err)
	}
	for _, e := range execIDs {
		got, err := si.execs["alice"].GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: e})
		if err != nil || got.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED {
			t.Fatalf("exec %s: %v, %v", e, got.GetState(), err)
		}
	}
	if l := leftovers(si.instance); len(l) > 0 {
		t.Fatalf("left after DeleteSandbox:\n%s", strings.Join(l, "\n"))
	}
	if procs := hostscan.InUIDWindow(uid, uid+rangeSize); len(procs) > 0 {
		t.Fatalf("processes left: %v", procs)
	}
	if sb, err := alice.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id}); err != nil || sb.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND ||
		!strings.Contains(sb.GetMessage(), "(deleted: ") {
		t.Fatalf("GetSandbox after delete: %v, %v; want NOT_FOUND saying it was deleted", sb, err)
	}
	if _, err := alice.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("second delete: %v", err)
	}
}

// TestSessionMetrics: a supervisor with metrics counts its session
// sandboxes' creates, their ends by reason, the live ones, and the
// events its bounded logs dropped (here a log of 8 events and an exec
// printing more).
func TestSessionMetrics(t *testing.T) {
	m := metrics.New()
	si := startSessionInstance(t, "sess-metrics", 4, func(c *supervisor.Config) {
		c.Metrics = m
		c.Sessions.Events.MaxEntries = 8
	})
	ctx := callCtx(t)
	a := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	ttl := int64(1)
	b, err := si.sessions["bob"].CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{ShutdownAfterSeconds: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	si.mustExec(t, "alice", a, "i=0; while [ $i -lt 20 ]; do echo line $i; sleep 0.01; i=$((i+1)); done")
	if _, err := si.sessions["alice"].DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: a}); err != nil {
		t.Fatal(err)
	}
	sub, err := si.sessions["bob"].SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: b.GetSandboxId()})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := sub.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("bob's subscription: %v", err)
			}
			break // bob's sandbox expired
		}
	}
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	value := func(name, label, v string) float64 {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, x := range mf.GetMetric() {
				for _, l := range x.GetLabel() {
					if label == "" || (l.GetName() == label && l.GetValue() == v) {
						return metricValue(x)
					}
				}
				if label == "" {
					return metricValue(x)
				}
			}
		}
		return -1
	}
	for _, c := range []struct {
		name, label, v string
		want           float64
	}{
		{"execfarm_session_sandboxes_created_total", "outcome", "ok", 2},
		{"execfarm_session_sandboxes_created_total", "outcome", "error", 0},
		{"execfarm_session_sandboxes_ended_total", "reason", "deleted", 1},
		{"execfarm_session_sandboxes_ended_total", "reason", "expired", 1},
		{"execfarm_session_sandboxes", "", "", 0},
		{"execfarm_sandbox_starts_total", "path", "session", 2},
	} {
		if got := value(c.name, c.label, c.v); got != c.want {
			t.Errorf("%s{%s=%q} = %v, want %v", c.name, c.label, c.v, got, c.want)
		}
	}
	// Alice's log: ready, started, 20 lines (20 events at least, each
	// written apart), ended, END: at least 24 events in 8 places.
	if got := value("execfarm_session_events_dropped_total", "", ""); got < 24-8 {
		t.Errorf("events dropped %v, want at least %d", got, 24-8)
	}
}
