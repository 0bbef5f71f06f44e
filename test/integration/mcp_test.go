//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/test/testbin"
)

// TestMCPAnswersMalformedLines: an MCP client of `execfarm mcp` that sends
// lines that are not JSON-RPC messages (garbage, an array, a batch, an
// object id, a truncated message, an over-long line) gets a JSON-RPC error
// for each, and the session keeps serving: a tool call afterwards runs in
// a sandbox of the shared supervisor.
func TestMCPAnswersMalformedLines(t *testing.T) {
	in := requireSandbox(t)
	dir := t.TempDir()
	if err := testbin.Build(dir, "execfarm"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dir+"/execfarm", "mcp")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SANDBOX_SOCKET_PATH=" + in.tc.SocketPath}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		stdin.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("execfarm mcp: %v", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("execfarm mcp did not exit when its input closed")
		}
	}()
	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			_ = json.Unmarshal(sc.Bytes(), &m)
			lines <- m
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatalf("write %.40q: %v", s, err)
		}
	}
	next := func(what string) map[string]any {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("%s: execfarm mcp closed its output (exited)", what)
			}
			return m
		case <-time.After(time.Minute):
			t.Fatalf("%s: no answer within a minute: the session hangs", what)
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next("initialize"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		name, line string
		code       float64
	}{
		{"garbage", "garbage", -32700},
		{"truncated", `{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700},
		{"array", "[1,2,3]", -32600},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, -32600},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600},
		{"over 16 MiB", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"` + strings.Repeat("a", 17<<20) + `"}}`, -32600},
	} {
		send(c.line)
		m := next(c.name)
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != nil || e == nil || e["code"] != c.code {
			t.Errorf("%s: answered %v, want error %v with id null", c.name, m, c.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"runSandbox","arguments":{"runtime":"shell","code":"echo still-serving"}}}`)
	m := next("tool call")
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(9) || sc["output"] != "still-serving\n" {
		t.Fatalf("tool call after the malformed lines: %v", m)
	}
}
