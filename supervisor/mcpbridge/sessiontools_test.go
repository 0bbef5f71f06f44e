package mcpbridge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// fakeSessions records CreateSandbox requests and counts Exec calls
// (refused UNAVAILABLE); other methods panic through the embedded nil
// interface (failing the test).
type fakeSessions struct {
	execfarmv1.SessionServiceClient
	mu      sync.Mutex
	creates []*execfarmv1.CreateSandboxRequest
	execs   int
	// refuseNoExpiry refuses shutdown_after_seconds 0 as the supervisor
	// does under its default lifetime ceiling.
	refuseNoExpiry bool
}

func (f *fakeSessions) lastCreate() *execfarmv1.CreateSandboxRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.creates) == 0 {
		return nil
	}
	return f.creates[len(f.creates)-1]
}

func (f *fakeSessions) execCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs
}

func (f *fakeSessions) Exec(context.Context, *execfarmv1.ExecRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[execfarmv1.ExecChunk], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs++
	return nil, status.Error(codes.Unavailable, "fake: no sandboxes")
}

func (f *fakeSessions) CreateSandbox(_ context.Context, r *execfarmv1.CreateSandboxRequest, _ ...grpc.CallOption) (*execfarmv1.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, proto.Clone(r).(*execfarmv1.CreateSandboxRequest))
	if f.refuseNoExpiry && r.ShutdownAfterSeconds != nil && *r.ShutdownAfterSeconds == 0 {
		return nil, status.Error(codes.ResourceExhausted, "session: quota exceeded: a sandbox without expiry is over the sandbox lifetime ceiling of 86400 s (--sandbox-max-lifetime)")
	}
	return &execfarmv1.Sandbox{SandboxId: fmt.Sprintf("sb%d", len(f.creates))}, nil
}

// TestCreateSandboxNullLifetimeIsNoTimeout: create_sandbox with
// "shutdown_after_seconds": null, sent as raw JSON, asks for no expiry
// (0), seed 001's "Set as None to disable a timeout", which a server with
// a lifetime ceiling refuses naming it (it once became the default,
// 300 s, silently); absent asks for nothing, so that the supervisor gives
// its default (the profile's lifetime, else 300 s), though the schema
// declares the seed's default, 300, which the SDK fills in; a number is
// passed on.
func TestCreateSandboxNullLifetimeIsNoTimeout(t *testing.T) {
	f := &fakeSessions{}
	b, err := New(Config{Executions: &fakeClient{}, Sessions: f, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, b.Server)
	cases := []struct {
		args string
		want *int64 // the request's shutdown_after_seconds
	}{
		{`{"shutdown_after_seconds":null}`, proto.Int64(0)},
		{`{}`, nil},
		{`{"warmpool":"default","shutdown_after_seconds":null}`, proto.Int64(0)},
		{`{"warmpool":"default","labels":null}`, nil},
		{`{"shutdown_after_seconds":60}`, proto.Int64(60)},
		{`{"shutdown_after_seconds":300}`, proto.Int64(300)},
	}
	for i, c := range cases {
		m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_sandbox","arguments":%s}}`, 10+i, c.args))
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] == true {
			t.Errorf("%s: answer %v, want a sandbox", c.args, m)
			continue
		}
		f.mu.Lock()
		got := f.creates[len(f.creates)-1].ShutdownAfterSeconds
		f.mu.Unlock()
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: request's shutdown_after_seconds = %v, want %v", c.args, fmtPtr(got), fmtPtr(c.want))
		}
	}
	// The supervisor's refusal of no expiry under a ceiling reaches the
	// agent, naming the ceiling.
	f.refuseNoExpiry = true
	m := send(`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"create_sandbox","arguments":{"shutdown_after_seconds":null}}}`)
	if res, _ := m["result"].(map[string]any); res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "--sandbox-max-lifetime") {
		t.Errorf("null under a ceiling: answer %v, want the refusal naming --sandbox-max-lifetime", m)
	}
	// Below the minimum is still refused, before any call.
	n := len(f.creates)
	m = send(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"create_sandbox","arguments":{"shutdown_after_seconds":0}}}`)
	if res, _ := m["result"].(map[string]any); m["error"] == nil && (res == nil || res["isError"] != true) {
		t.Errorf("shutdown_after_seconds 0: answer %v, want a refusal", m)
	}
	if len(f.creates) != n {
		t.Errorf("shutdown_after_seconds 0 reached the supervisor")
	}
}

// TestToolSchemasDeclareTheirDefaults: the tools' input schemas carry
// the seed's defaults, which an MCP client (the Inspector) shows and
// fills in.
func TestToolSchemasDeclareTheirDefaults(t *testing.T) {
	b, err := New(Config{Executions: &fakeClient{}, Sessions: &fakeSessions{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, b.Server)
	m := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	res, _ := m["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	defaults := map[string]map[string]any{}
	for _, x := range tools {
		tl := x.(map[string]any)
		props, _ := tl["inputSchema"].(map[string]any)["properties"].(map[string]any)
		defaults[tl["name"].(string)] = map[string]any{}
		for name, p := range props {
			if d, ok := p.(map[string]any)["default"]; ok {
				defaults[tl["name"].(string)][name] = d
			}
		}
	}
	want := map[string]map[string]any{
		ToolName:           {"mode": "execute", "timeout": 30000.0, "limit": 10.0},
		CreateSandboxTool:  {"shutdown_after_seconds": 300.0, "sandbox_ready_timeout": 180.0},
		ExecuteCommandTool: {"timeout": 60.0, "max_output_chars": 30000.0},
		ListFilesTool:      {"max_entries": 1000.0},
	}
	for tl, args := range want {
		for arg, d := range args {
			if got, ok := defaults[tl][arg]; !ok || got != d {
				t.Errorf("%s.%s: default %v (given %v), want %v", tl, arg, got, ok, d)
			}
		}
	}
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// TestExecuteCommandRefusesWhatCannotStart: a command /bin/sh -c could
// not take as its argument (a NUL byte, sent as JSON's \u0000; more than
// MAX_ARG_STRLEN) is INVALID_ARGUMENT naming command, and no exec is
// asked of the supervisor (red-team pass: "echo \u0000" spent a sandbox's
// exec that failed INTERNAL "start /bin/sh: invalid argument").
func TestExecuteCommandRefusesWhatCannotStart(t *testing.T) {
	f := &fakeSessions{}
	b, err := New(Config{Executions: &fakeClient{}, Sessions: f, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, b.Server)
	for i, c := range []struct{ command, want string }{
		{`"echo \u0000"`, "INVALID_ARGUMENT: command holds a NUL byte (at byte 5)"},
		{`"` + strings.Repeat("x", 200<<10) + `"`, "INVALID_ARGUMENT: command is 204800 bytes"},
	} {
		m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_command","arguments":{"sandbox_claim_name":"sb1","command":%s}}}`, 10+i, c.command))
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		var text string
		if len(content) == 1 {
			text, _ = content[0].(map[string]any)["text"].(string)
		}
		if res["isError"] != true || !strings.HasPrefix(text, c.want) {
			t.Errorf("execute_command %.40s: answer %v, want a tool error starting %q", c.command, m, c.want)
		}
	}
	if n := f.execCount(); n != 0 {
		t.Errorf("%d refused commands reached the supervisor", n)
	}
}

// TestNullArgumentsAreAbsent: JSON null for any tool's argument is "not
// given", as an absent argument: the optional ones (create_sandbox's
// labels, pod_labels, pod_annotations, namespace, warmpool,
// sandbox_ready_timeout; execute_command's timeout and
// max_output_chars; runSandbox's limit and states) get their defaults
// instead of failing the schema's type (labels: null was refused with
// `has type "null", want "object"`), and a required one is missing.
// One null is not "absent": create_sandbox's shutdown_after_seconds,
// seed 001's "None to disable a timeout" (0, no expiry).
func TestNullArgumentsAreAbsent(t *testing.T) {
	f, fc := &fakeSessions{}, &fakeClient{}
	b, err := New(Config{Executions: fc, Sessions: f, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, b.Server)
	call := func(id int, tool, args string) (isError bool, text string) {
		t.Helper()
		m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
		res, _ := m["result"].(map[string]any)
		if res == nil {
			t.Fatalf("%s %s: answer %v, want a result", tool, args, m)
		}
		if content, _ := res["content"].([]any); len(content) > 0 {
			text, _ = content[0].(map[string]any)["text"].(string)
		}
		return res["isError"] == true, text
	}
	if bad, text := call(10, CreateSandboxTool, `{"labels":null,"pod_labels":null,"pod_annotations":null,"namespace":null,"warmpool":null,"sandbox_ready_timeout":null,"shutdown_after_seconds":null}`); bad {
		t.Errorf("create_sandbox with every argument null: %s", text)
	} else if r := f.lastCreate(); r.GetLabels() != nil || r.GetProfile() != "" || r.ShutdownAfterSeconds == nil || *r.ShutdownAfterSeconds != 0 {
		t.Errorf("create_sandbox with every argument null asked for %v, want nothing set but no expiry", r)
	}
	// The fake's Exec refuses UNAVAILABLE: reaching it is passing the
	// schema.
	if _, text := call(11, ExecuteCommandTool, `{"sandbox_claim_name":"sb1","command":"true","namespace":null,"timeout":null,"max_output_chars":null}`); !strings.HasPrefix(text, "UNAVAILABLE") || f.execCount() != 1 {
		t.Errorf("execute_command with its optional arguments null: %q after %d execs, want the exec asked for", text, f.execCount())
	}
	if bad, text := call(12, ExecuteCommandTool, `{"sandbox_claim_name":null,"command":"true"}`); !bad || !strings.Contains(text, "sandbox_claim_name") || f.execCount() != 1 {
		t.Errorf("execute_command with sandbox_claim_name null: %q, want it refused as missing", text)
	}
	if bad, text := call(13, ToolName, `{"mode":"list","limit":null,"states":null,"runtime":null,"includeCompletedWithinMs":null}`); bad {
		t.Errorf("runSandbox list with its arguments null: %s", text)
	} else if r, ok := fc.last().(*sandboxv1.ListExecutionsRequest); !ok || r.GetLimit() != DefaultListLimit || len(r.GetStates()) != 0 {
		t.Errorf("runSandbox list with its arguments null asked for %v, want the default limit and no states", fc.last())
	}
}

// TestIntegerArgumentsAreExact: every integer argument of every tool
// (read from tools/list) given 2^63-1, 2^53 or a fraction is refused
// INVALID_ARGUMENT naming the argument, the value as sent and the range,
// and no Go type; 2^53-1, where the schema allows it, passes.
func TestIntegerArgumentsAreExact(t *testing.T) {
	f, fc := &fakeSessions{}, &fakeClient{}
	b, err := New(Config{Executions: fc, Sessions: f, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	send := jsonLines(t, b.Server)
	list := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	res, _ := list["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	id, checked := 10, 0
	for _, tool := range tools {
		tool := tool.(map[string]any)
		name := tool["name"].(string)
		props, _ := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		for arg, p := range props {
			p := p.(map[string]any)
			isInt := p["type"] == "integer"
			if types, ok := p["type"].([]any); ok {
				isInt = slices.Contains(types, any("integer"))
			}
			if !isInt {
				continue
			}
			checked++
			for _, v := range []string{"9223372036854775807", "9007199254740992", "-9007199254740993", "1e400", "2.5", `"5"`, `{"a":1}`, `[1]`, `true`} {
				id++
				m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{%q:%s}}}`, id, name, arg, v))
				r, _ := m["result"].(map[string]any)
				var text string
				if content, _ := r["content"].([]any); len(content) > 0 {
					text, _ = content[0].(map[string]any)["text"].(string)
				}
				said := v + " " // the value as sent, or for one that is no number its kind
				switch v[0] {
				case '"':
					said = "a string: "
				case '{':
					said = "an object: "
				case '[':
					said = "an array: "
				case 't':
					said = "a boolean: "
				}
				if r["isError"] != true || !strings.HasPrefix(text, "INVALID_ARGUMENT: "+arg+": "+said) || !strings.Contains(text, "want an integer from ") {
					t.Errorf("%s %s %s: %q, want it refused naming the argument, the value and the range", name, arg, v, text)
				}
				for _, goType := range []string{"int64", "int32", "float64", "Go ", "struct", "map["} {
					if strings.Contains(text, goType) {
						t.Errorf("%s %s %s: %q names a Go type", name, arg, v, text)
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d integer arguments, want every one of the tools' (at least 10)", checked)
	}
	id++
	m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"mode":"list","includeCompletedWithinMs":9007199254740991}}}`, id, ToolName))
	if r, _ := m["result"].(map[string]any); r["isError"] == true {
		t.Errorf("includeCompletedWithinMs 2^53-1: %v, want it passed", r)
	} else if req, ok := fc.last().(*sandboxv1.ListExecutionsRequest); !ok || req.GetIncludeCompletedWithinMs() != 9007199254740991 {
		t.Errorf("includeCompletedWithinMs 2^53-1 asked for %v, want it exact", fc.last())
	}
}
