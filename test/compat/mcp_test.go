//go:build linux

package compat

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/mcpbridge"
	"github.com/execfarm/execfarm/supervisor/transport"
	"github.com/execfarm/execfarm/test/testbin"
)

// buildExecfarm builds execfarm with the sandbox binaries next to it, as
// an installation has them, and returns its path.
func buildExecfarm(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "execfarm-compat-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := testbin.Build(dir, append([]string{"execfarm"}, testbin.Sandbox...)...); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "execfarm")
}

// mcpSession starts `execfarm mcp` with env (on top of a clean PATH) and
// connects the MCP Go SDK's client to it over stdin/stdout, as an agent's
// host does. Progress notifications go to progress.
func mcpSession(t *testing.T, bin string, env []string, progress chan<- string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, env...)
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "execfarm-compat", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to execfarm mcp: %v", err)
	}
	return cs, cmd
}

func callTool(t *testing.T, cs *mcp.ClientSession, args map[string]any, meta mcp.Meta) mcpbridge.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.ToolName, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("runSandbox %v: %v", args, err)
	}
	if res.IsError {
		t.Fatalf("runSandbox %v: tool error %v", args, res.Content[0].(*mcp.TextContent).Text)
	}
	// The text content is the same JSON as the structured content, for
	// clients that read only text.
	var fromText, fromStruct mcpbridge.Output
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &fromText); err != nil {
		t.Fatalf("runSandbox %v: text content is not the JSON result: %v", args, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &fromStruct); err != nil {
		t.Fatal(err)
	}
	if fromText.ExecutionID != fromStruct.ExecutionID || fromText.Output != fromStruct.Output {
		t.Errorf("text and structured content differ: %+v vs %+v", fromText, fromStruct)
	}
	return fromStruct
}

// TestMCPBridgeEmbedded runs `execfarm mcp` as an agent's host would, with
// no supervisor configured: it starts an embedded one, serves every mode
// of runSandbox over stdio, and leaves nothing behind once the client
// closes its stdin.
func TestMCPBridgeEmbedded(t *testing.T) {
	requireRoot(t)
	bin := buildExecfarm(t)
	progress := make(chan string, 64)
	cs, cmd := mcpSession(t, bin, nil, progress)
	pid := cmd.Process.Pid

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := sorted(append([]string{"runSandbox"}, sessionTools...)...); !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v; want %v", names, want)
	}

	out := callTool(t, cs, map[string]any{"code": "const n: number = 6 * 7; console.log(n)"}, nil)
	if out.Success == nil || !*out.Success || out.Output != "42\n" || out.State != "completed" || out.TerminationReason != "exited" {
		t.Errorf("execute goja = %+v", out)
	}
	out = callTool(t, cs, map[string]any{"code": "echo out; echo err >&2; exit 3", "runtime": "shell"}, nil)
	if *out.Success || out.State != "failed" || out.ExitCode == nil || *out.ExitCode != 3 || out.Output != "out\n" || out.ErrorOutput != "err\n" {
		t.Errorf("execute shell exit 3 = %+v", out)
	}

	out = callTool(t, cs, map[string]any{"mode": "stream", "code": "for i in 1 2 3; do echo line $i; sleep 0.1; done", "runtime": "shell"}, mcp.Meta{"progressToken": "t1"})
	if out.Output != "line 1\nline 2\nline 3\n" || !*out.Success {
		t.Errorf("stream = %+v", out)
	}
	var streamed strings.Builder
	timeout := time.After(10 * time.Second)
	for streamed.String() != out.Output {
		select {
		case m := <-progress:
			streamed.WriteString(m)
		case <-timeout:
			t.Fatalf("progress notifications carried %q, want %q", streamed.String(), out.Output)
		}
	}

	async := callTool(t, cs, map[string]any{"mode": "async", "code": "print('async done')", "runtime": "python"}, nil)
	if async.ExecutionID == "" || (async.State != "pending" && async.State != "running") {
		t.Fatalf("async = %+v", async)
	}
	out = callTool(t, cs, map[string]any{"mode": "status", "executionId": async.ExecutionID, "wait": true}, nil)
	if out.State != "completed" || out.Output != "async done\n" || out.OutputLength == nil || *out.OutputLength != int64(len("async done\n")) {
		t.Errorf("status wait = %+v", out)
	}
	list := callTool(t, cs, map[string]any{"mode": "list", "states": []string{"completed"}}, nil)
	found := false
	if list.Executions == nil {
		t.Fatalf("list without executions: %+v", list)
	}
	for _, e := range *list.Executions {
		found = found || (e.ExecutionID == async.ExecutionID && e.Runtime == "python")
	}
	if !found {
		t.Errorf("list of completed executions lacks %s: %+v", async.ExecutionID, *list.Executions)
	}

	long := callTool(t, cs, map[string]any{"mode": "async", "code": "sleep 60", "runtime": "shell"}, nil)
	// Its sandbox's state is in the bridge's own directory, not in the
	// default state directory that a serve owns.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st := callTool(t, cs, map[string]any{"mode": "status", "executionId": long.ExecutionID}, nil); st.State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleep did not start in 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	// (A sandbox of an earlier execution may still be being reset or
	// destroyed: a result is published before its sandbox's teardown.)
	if sb, _ := filepath.Glob(filepath.Join(host.EmbeddedRoot, "execfarm-embedded-"+strconv.Itoa(pid)+"-*", "sb", "sb-*")); len(sb) < 1 {
		t.Errorf("sandbox directories in the bridge's own state directory: %v, want the running one's", sb)
	}
	if c := callTool(t, cs, map[string]any{"mode": "cancel", "executionId": long.ExecutionID}, nil); !*c.Success {
		t.Errorf("cancel = %+v", c)
	}
	if out := callTool(t, cs, map[string]any{"mode": "status", "executionId": long.ExecutionID, "wait": true}, nil); out.State != "cancelled" {
		t.Errorf("status after cancel = %+v", out)
	}

	out = callTool(t, cs, map[string]any{"mode": "test", "code": "const add = (a: number, b: number) => a + b;",
		"tests": "test('adds', () => { assert.is(add(1, 2), 3); });\ntest('wrong', () => { assert.is(add(1, 1), 3); });"}, nil)
	if out.Summary == nil || out.Summary.Total != 2 || out.Summary.Passed != 1 || out.Summary.Failed != 1 || *out.Success {
		t.Errorf("test = %+v (summary %+v)", out, out.Summary)
	}

	// Refusals are tool errors the agent can read, with the gRPC code.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "runSandbox", Arguments: map[string]any{"mode": "status", "executionId": "no-such-id"}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "NOT_FOUND:") {
		t.Errorf("status of an unknown id = %v, %v; want a NOT_FOUND tool error", res, err)
	}

	// Closing stdin ends the session: the bridge and its embedded
	// supervisor exit and remove their temporary directory.
	if err := cs.Close(); err != nil {
		t.Errorf("close session: %v", err)
	}
	if st := cmd.ProcessState; st == nil || !st.Success() {
		t.Errorf("execfarm mcp exited with %v, want 0", st)
	}
	if left, _ := filepath.Glob(filepath.Join(host.EmbeddedRoot, "execfarm-embedded-"+strconv.Itoa(pid)+"-*")); len(left) > 0 {
		t.Errorf("embedded supervisor left %v", left)
	}
}

// TestMCPBridgeConfiguredSupervisor: with SANDBOX_SOCKET_PATH set, the
// bridge uses that supervisor.
func TestMCPBridgeConfiguredSupervisor(t *testing.T) {
	requireRoot(t)
	socket := startSupervisor(t)
	bin := buildExecfarm(t)
	cs, _ := mcpSession(t, bin, []string{"SANDBOX_SOCKET_PATH=" + socket}, make(chan string, 1))
	defer cs.Close()
	out := callTool(t, cs, map[string]any{"code": "echo via socket", "runtime": "shell"}, nil)
	if out.Output != "via socket\n" || !*out.Success {
		t.Errorf("execute = %+v", out)
	}
	// It runs there, not in an embedded supervisor of the bridge's own:
	// a session sandbox made through it is in that supervisor's state
	// directory. (The execution itself is the MCP client's, whom no other
	// caller of the supervisor sees.)
	var created mcpbridge.CreateSandboxOutput
	mustTool(t, cs, "create_sandbox", map[string]any{}, &created)
	if n := sandboxDirs(t, socket); n != 1 {
		t.Errorf("%d sandboxes in the configured supervisor, want the one created", n)
	}
	conn, err := transport.Config{SocketPath: socket}.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = sandboxv1.NewSandboxServiceClient(conn).GetExecution(context.Background(), &sandboxv1.GetExecutionRequest{ExecutionId: out.ExecutionID})
	if status.Code(err) != codes.NotFound {
		t.Errorf("another caller's GetExecution(%s) = %v, want NOT_FOUND", out.ExecutionID, err)
	}
}
