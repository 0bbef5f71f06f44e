//go:build linux

package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/supervisor"
)

// errReason returns the google.rpc.ErrorInfo reason of err, "" if none.
func errReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}

// TestSessionExecArgv: an exec's argv runs in a real sandbox without a
// shell: arguments reach the program byte for byte (spaces, quotes, $,
// globs, a leading '-', NAME=VALUE), a bare name is found on the exec's
// PATH (the env's own PATH too), one not found exits 127, and the
// refusals are INVALID_ARGUMENT naming their field.
func TestSessionExecArgv(t *testing.T) {
	si := startSessionInstance(t, "sess-argv", 2)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	si.mustExec(t, "alice", id, "mkdir -p bin && printf '#!/bin/sh\\necho mine \"$@\"\\n' > bin/tool && chmod +x bin/tool")
	for _, tt := range []struct {
		req  *execfarmv1.ExecRequest
		want string
	}{
		{&execfarmv1.ExecRequest{Argv: []string{"printf", "[%s]", "a b", `"q'`, "$HOME", "*", "-n", "A=b"}},
			`[a b]["q'][$HOME][*][-n][A=b]`},
		{&execfarmv1.ExecRequest{Argv: []string{"/bin/echo", "abs"}}, "abs\n"},
		{&execfarmv1.ExecRequest{Argv: []string{"./bin/tool", "rel"}}, "mine rel\n"},
		{&execfarmv1.ExecRequest{Argv: []string{"tool", "on", "path"}, Env: map[string]string{"PATH": "/workspace/bin:/usr/bin:/bin"}}, "mine on path\n"},
		{&execfarmv1.ExecRequest{Argv: []string{"pwd"}, Workdir: "bin"}, "/workspace/bin\n"},
		{&execfarmv1.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("from stdin")}, "from stdin"},
	} {
		tt.req.SandboxId = id
		r, err := si.execRequest(t, "alice", tt.req)
		if err != nil || !r.result.GetSuccess() || r.stdout != tt.want {
			t.Errorf("argv %q: stdout %q (want %q), stderr %q, %v, %v", tt.req.Argv, r.stdout, tt.want, r.stderr, r.result, err)
		}
	}
	r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Argv: []string{"no-such-program-x"}})
	if err != nil || r.result.GetOutcome().GetExitCode() != 127 || !strings.Contains(r.stderr, "no-such-program-x: not found") {
		t.Errorf("argv of a program not on PATH: exit %d, stderr %q, %v; want 127, not found", r.result.GetOutcome().GetExitCode(), r.stderr, err)
	}
	for _, tt := range []struct {
		req    *execfarmv1.ExecRequest
		field  string
		reason string
	}{
		{&execfarmv1.ExecRequest{Argv: []string{""}}, "argv", "INVALID_FIELD"},
		{&execfarmv1.ExecRequest{Argv: []string{"echo"}, Code: "echo"}, "argv", "INVALID_FIELD"},
		{&execfarmv1.ExecRequest{Argv: []string{"echo", "a\x00b"}}, "argv", "NUL_IN_ARGUMENT"},
		{&execfarmv1.ExecRequest{Argv: []string{"echo", strings.Repeat("x", 200_000)}}, "argv", "ARGUMENT_TOO_LONG"},
		{&execfarmv1.ExecRequest{Argv: []string{"echo"}, Runtime: 2 /* python */}, "runtime", "INVALID_FIELD"},
		{&execfarmv1.ExecRequest{}, "code", "EMPTY_CODE"},
	} {
		tt.req.SandboxId = id
		_, err := si.execRequest(t, "alice", tt.req)
		if status.Code(err) != codes.InvalidArgument || badField(err) != tt.field || errReason(err) != tt.reason {
			t.Errorf("argv %.40q code %q: %v; want INVALID_ARGUMENT %s naming %s", tt.req.Argv, tt.req.Code, err, tt.reason, tt.field)
		}
	}
	// Another principal's sandbox does not exist.
	if _, err := si.execRequest(t, "bob", &execfarmv1.ExecRequest{SandboxId: id, Argv: []string{"true"}}); status.Code(err) != codes.NotFound {
		t.Errorf("bob's argv exec: %v, want NOT_FOUND", err)
	}
}

// TestSessionExtend: ExtendSandbox sets the time left from now; past the
// lifetime ceiling it is RESOURCE_EXHAUSTED naming --sandbox-max-lifetime
// and changes nothing; negative is INVALID_ARGUMENT; another principal's
// sandbox and an unknown one are NOT_FOUND; shortened, the sandbox
// expires.
func TestSessionExtend(t *testing.T) {
	si := startSessionInstance(t, "sess-extend", 2, func(c *supervisor.Config) { c.Sessions.MaxLifetime = time.Hour })
	ctx := callCtx(t)
	alice := si.sessions["alice"]
	ttl := int64(60)
	sb, err := alice.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{ShutdownAfterSeconds: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.GetSandboxId()
	before := time.Now()
	got, err := alice.ExtendSandbox(ctx, &execfarmv1.ExtendSandboxRequest{SandboxId: id, TtlSeconds: 1800})
	if err != nil {
		t.Fatal(err)
	}
	if exp := time.UnixMilli(got.GetExpiresAtMs()); exp.Before(before.Add(1800*time.Second-time.Second)) || exp.After(time.Now().Add(1800*time.Second+time.Second)) {
		t.Errorf("expires %v, want 30 min from now", time.Until(exp))
	}
	if st, _ := alice.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id}); st.GetExpiresAtMs() != got.GetExpiresAtMs() {
		t.Errorf("GetSandbox expires %d, ExtendSandbox said %d", st.GetExpiresAtMs(), got.GetExpiresAtMs())
	}
	for _, tt := range []struct {
		ttl    int64
		code   codes.Code
		reason string
		text   string
	}{
		{3600, codes.ResourceExhausted, "QUOTA_EXCEEDED", "--sandbox-max-lifetime"},
		{0, codes.ResourceExhausted, "QUOTA_EXCEEDED", "--sandbox-max-lifetime"},
		{-1, codes.InvalidArgument, "INVALID_FIELD", "ttl_seconds"},
	} {
		_, err := alice.ExtendSandbox(ctx, &execfarmv1.ExtendSandboxRequest{SandboxId: id, TtlSeconds: tt.ttl})
		if status.Code(err) != tt.code || errReason(err) != tt.reason || !strings.Contains(status.Convert(err).Message(), tt.text) {
			t.Errorf("extend %d s: %v; want %v %s saying %s", tt.ttl, err, tt.code, tt.reason, tt.text)
		}
		if tt.code == codes.InvalidArgument && badField(err) != "ttl_seconds" {
			t.Errorf("extend %d s names field %q", tt.ttl, badField(err))
		}
	}
	if st, _ := alice.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id}); st.GetExpiresAtMs() != got.GetExpiresAtMs() {
		t.Errorf("a refused extend moved the expiry")
	}
	for who, sid := range map[string]string{"bob": id, "alice": "sb-no-such-sandbox"} {
		if _, err := si.sessions[who].ExtendSandbox(ctx, &execfarmv1.ExtendSandboxRequest{SandboxId: sid, TtlSeconds: 60}); status.Code(err) != codes.NotFound {
			t.Errorf("%s extends %s: %v, want NOT_FOUND", who, sid, err)
		}
	}
	if _, err := alice.ExtendSandbox(ctx, &execfarmv1.ExtendSandboxRequest{TtlSeconds: 60}); status.Code(err) != codes.InvalidArgument || badField(err) != "sandbox_id" {
		t.Errorf("extend without an id: %v, want INVALID_ARGUMENT naming sandbox_id", err)
	}
	// Shortened to 1 s: it ends, expired, within the scaled bound.
	if _, err := alice.ExtendSandbox(ctx, &execfarmv1.ExtendSandboxRequest{SandboxId: id, TtlSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	sub, err := alice.SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: id})
	if err != nil {
		t.Fatal(err)
	}
	var last *execfarmv1.SandboxEvent
	for {
		ev, err := sub.Recv()
		if err != nil {
			break
		}
		last = ev
	}
	if last.GetEnded().GetReason() != execfarmv1.EndReason_END_REASON_EXPIRED {
		t.Fatalf("last event %v, want ended, expired", last)
	}
}

// TestSessionMoveFile: MoveFile renames inside the real sandbox, as the
// sandbox sees it; an existing destination is ALREADY_EXISTS without
// overwrite, a missing source NOT_FOUND, a move across mounts
// (/workspace to /tmp) FAILED_PRECONDITION, bad paths INVALID_ARGUMENT
// naming the field, another principal's sandbox NOT_FOUND; the log holds
// a file_moved event.
func TestSessionMoveFile(t *testing.T) {
	si := startSessionInstance(t, "sess-move", 2)
	ctx := callCtx(t)
	alice := si.sessions["alice"]
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	si.mustExec(t, "alice", id, "echo one > a.txt && echo two > b.txt && mkdir -p d/e && echo deep > d/e/f && ln -s /etc/passwd link && mkdir ro && chmod 555 ro")
	move := func(who, src, dst string, overwrite bool) (*execfarmv1.MoveFileResponse, error) {
		return si.sessions[who].MoveFile(ctx, &execfarmv1.MoveFileRequest{SandboxId: id, Source: src, Destination: dst, Overwrite: overwrite})
	}
	resp, err := move("alice", "a.txt", "/workspace/c.txt", false)
	if err != nil || resp.GetSource() != "/workspace/a.txt" || resp.GetDestination() != "/workspace/c.txt" {
		t.Fatalf("MoveFile: %v, %v", resp, err)
	}
	if _, err := move("alice", "d", "d2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := move("alice", "link", "link2", false); err != nil {
		t.Fatal(err)
	}
	if out := si.mustExec(t, "alice", id, "cat c.txt d2/e/f; test -e a.txt || echo gone; readlink link2").stdout; out != "one\ndeep\ngone\n/etc/passwd\n" {
		t.Errorf("after the moves: %q", out)
	}
	for _, tt := range []struct {
		who, src, dst string
		overwrite     bool
		code          codes.Code
		reason, field string
	}{
		{"alice", "c.txt", "b.txt", false, codes.AlreadyExists, "FILE_EXISTS", ""},
		{"alice", "nope", "x", false, codes.NotFound, "FILE_NOT_FOUND", ""},
		{"alice", "c.txt", "no/such/dir/x", false, codes.NotFound, "FILE_NOT_FOUND", ""},
		{"alice", "c.txt", "/tmp/c.txt", false, codes.FailedPrecondition, "BUSY", ""},
		{"alice", "d2", "b.txt", true, codes.FailedPrecondition, "NOT_A_DIRECTORY", ""},
		{"alice", "c.txt", "d2", true, codes.FailedPrecondition, "IS_A_DIRECTORY", ""},
		{"alice", "c.txt", "ro/c.txt", false, codes.PermissionDenied, "FILE_PERMISSION_DENIED", ""},
		{"alice", "", "x", false, codes.InvalidArgument, "INVALID_FIELD", "source"},
		{"alice", "c.txt", "../../..", false, codes.InvalidArgument, "INVALID_FIELD", "destination"},
		{"alice", "d2", "d2/inside", false, codes.InvalidArgument, "INVALID_FIELD", "destination"},
		{"alice", "/workspace", "/tmp/w", false, codes.InvalidArgument, "INVALID_FIELD", "source"},
		{"bob", "c.txt", "x", false, codes.NotFound, "SANDBOX_NOT_FOUND", ""},
	} {
		_, err := move(tt.who, tt.src, tt.dst, tt.overwrite)
		if status.Code(err) != tt.code || errReason(err) != tt.reason || (tt.field != "" && badField(err) != tt.field) {
			t.Errorf("%s moves %q to %q (overwrite %v): %v; want %v %s %s", tt.who, tt.src, tt.dst, tt.overwrite, err, tt.code, tt.reason, tt.field)
		}
	}
	if out := si.mustExec(t, "alice", id, "cat b.txt c.txt").stdout; out != "two\none\n" {
		t.Errorf("refused moves changed the files: %q", out)
	}
	if _, err := move("alice", "c.txt", "b.txt", true); err != nil {
		t.Fatalf("move with overwrite: %v", err)
	}
	if out := si.mustExec(t, "alice", id, "cat b.txt; ls").stdout; out != "one\nb.txt\nd2\nlink2\nro\n" {
		t.Errorf("after the overwrite: %q", out)
	}
	page, err := alice.ReadEvents(ctx, &execfarmv1.ReadEventsRequest{SandboxId: id, MaxEvents: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, ev := range page.GetEvents() {
		if m := ev.GetFileMoved(); m != nil {
			moved = append(moved, m.GetSource()+">"+m.GetDestination())
		}
	}
	want := "/workspace/a.txt>/workspace/c.txt /workspace/d>/workspace/d2 /workspace/link>/workspace/link2 /workspace/c.txt>/workspace/b.txt"
	if strings.Join(moved, " ") != want {
		t.Errorf("file_moved events %q, want %q", moved, want)
	}
}
