//go:build linux

package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/mcpbridge"
)

// TestOneTextRuleInEveryTool: the same program's output, holding invalid
// UTF-8, is the same text through gRPC Execute and ExecuteStream, the
// CLI's run, and the MCP tools runSandbox (execute and stream) and
// execute_command: each run of invalid bytes is one U+FFFD
// (internal/utf8text). execute_command once gave one per byte, so its
// output was longer than Execute's.
func TestOneTextRuleInEveryTool(t *testing.T) {
	const cmd = `printf 'a\377\376b\342\202c'`
	const want = "a\uFFFDb\uFFFDc"
	si := startSessionInstance(t, "utf8-rule", 2)
	ctx := callCtx(t)
	got := map[string]string{}

	exe := si.execs["alice"]
	req := &sandboxv1.ExecuteRequest{Runtime: sandboxv1.Runtime_RUNTIME_SHELL, RawOutput: true,
		Source: &sandboxv1.ExecuteRequest_Code{Code: cmd}}
	resp, err := exe.Execute(ctx, req)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	got["gRPC Execute"] = resp.GetOutput()
	st, err := exe.ExecuteStream(ctx, req)
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	var streamed strings.Builder
	for {
		c, err := st.Recv()
		if err != nil {
			t.Fatalf("ExecuteStream: %v", err)
		}
		if c.GetResult() != nil {
			break
		}
		streamed.WriteString(c.GetOutput())
	}
	got["gRPC ExecuteStream"] = streamed.String()

	out, errOut, code := si.cli(t, "alice", "run", "--runtime", "shell", "-e", cmd)
	if code != 0 {
		t.Fatalf("execfarm run: exit %d, stderr %q", code, errOut)
	}
	got["CLI run"] = out

	b, err := mcpbridge.New(mcpbridge.Config{Executions: exe, Sessions: si.sessions["alice"], Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := b.Server.Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any, field string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		// What the agent reads: the structured result as the JSON
		// encoder wrote it.
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		s, _ := m[field].(string)
		return s
	}
	got["MCP runSandbox execute"] = call(mcpbridge.ToolName, map[string]any{"runtime": "shell", "code": cmd}, "output")
	got["MCP runSandbox stream"] = call(mcpbridge.ToolName, map[string]any{"runtime": "shell", "code": cmd, "mode": "stream"}, "output")
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{})
	got["MCP execute_command"] = call("execute_command", map[string]any{"sandbox_claim_name": id, "command": cmd}, "stdout")

	for tool, s := range got {
		if s != want {
			t.Errorf("%s: %q, want %q", tool, s, want)
		}
	}
}
