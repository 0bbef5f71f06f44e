package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// rawSession serves NewServer over Transport on pipes; send writes raw
// bytes, next returns the next line written back.
type rawSession struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startRaw(t *testing.T, f *fakeClient, limit int) *rawSession {
	t.Helper()
	s, err := NewServer(f, "test")
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rs := &rawSession{in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	rs.out.Buffer(nil, 1<<20)
	go func() {
		rs.done <- s.Run(context.Background(), &Transport{In: inR, Out: outW, MaxLineBytes: limit})
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-rs.done:
		case <-time.After(10 * time.Second):
			t.Error("the session did not end when its input closed")
		}
	})
	return rs
}

func (rs *rawSession) send(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(rs.in, s); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// next returns the next message written back, decoded.
func (rs *rawSession) next(t *testing.T) map[string]any {
	t.Helper()
	got := make(chan map[string]any, 1)
	go func() {
		var m map[string]any
		if rs.out.Scan() {
			_ = json.Unmarshal(rs.out.Bytes(), &m)
		}
		got <- m
	}()
	select {
	case m := <-got:
		if m == nil {
			t.Fatal("no answer: the session ended")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s: the session hangs")
	}
	return nil
}

// TestMalformedLinesAreAnsweredAndTheSessionGoesOn: every kind of line
// that used to end the session (or, truncated, hang it) gets its JSON-RPC
// error with id null, and a tool call afterwards still works.
func TestMalformedLinesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	f := &fakeClient{execute: &sandboxv1.ExecuteResponse{Success: true, Output: "hi\n", State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED}}
	rs := startRaw(t, f, 4096)
	rs.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if m := rs.next(t); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	rs.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for _, c := range []struct {
		name, line string
		code       float64
	}{
		{"garbage", "garbage\n", codeParseError},
		{"truncated", `{"jsonrpc":"2.0","id":2,"method":"tools/list"` + "\n", codeParseError},
		{"array", "[1,2,3]\n", codeInvalidRequest},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]` + "\n", codeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}` + "\n", codeInvalidRequest},
		{"scalar", "42\n", codeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":5,"method":"ping"}` + "\n", codeInvalidRequest},
		{"too long", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"` + strings.Repeat("a", 10000) + `"}}` + "\n", codeInvalidRequest},
	} {
		rs.send(t, c.line)
		m := rs.next(t)
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != nil || e == nil || e["code"] != c.code {
			t.Errorf("%s: answered %v, want error %v with id null", c.name, m, c.code)
		}
	}
	rs.send(t, "\n   \n")
	rs.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"runSandbox","arguments":{"code":"console.log('hi')"}}}`+"\n")
	m := rs.next(t)
	res, _ := m["result"].(map[string]any)
	if m["id"] != float64(7) || res == nil || res["isError"] == true {
		t.Fatalf("tool call after the malformed lines: %v", m)
	}
	if sc, _ := res["structuredContent"].(map[string]any); sc["output"] != "hi\n" {
		t.Fatalf("tool call result: %v", res)
	}
	select {
	case err := <-rs.done:
		t.Fatalf("the session ended: %v", err)
	default:
	}
}
