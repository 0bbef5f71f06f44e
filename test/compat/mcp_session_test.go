//go:build linux

package compat

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/mcpbridge"
	"github.com/execfarm/execfarm/test/testcert"
)

// sessionTools are agent-sandbox's tools, which `execfarm mcp` serves beside
// runSandbox.
var sessionTools = []string{"create_sandbox", "delete_sandbox", "execute_command", "upload_file", "download_file", "list_files", "file_exists", "get_sandbox_status"}

// tool calls a session tool and decodes its structured result into out;
// it returns the text of a tool error ("" when the call succeeded) and the
// result's text content.
func tool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (toolErr, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return text, text
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return "", text
}

// mustTool is tool for a call that must succeed.
func mustTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	toolErr, text := tool(t, cs, name, args, out)
	if toolErr != "" {
		t.Fatalf("%s %v: tool error %s", name, args, toolErr)
	}
	return text
}

// sandboxesOf reads the get_sandboxes resource: the client's sandbox ids.
func sandboxesOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpbridge.SandboxesURI})
	if err != nil {
		t.Fatalf("read get_sandboxes: %v", err)
	}
	var list []mcpbridge.SandboxListEntry
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &list); err != nil {
		t.Fatalf("get_sandboxes: %v: %s", err, res.Contents[0].Text)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.SandboxClaimName)
	}
	slices.Sort(ids)
	return ids
}

// sandboxDirs counts the sandboxes alive in the supervisor whose socket
// is socket: their host directories in its state directory (a delete
// answers once its sandbox's is gone).
func sandboxDirs(t *testing.T, socket string) int {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(filepath.Dir(socket), "sb", "sb-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(dirs)
}

// TestMCPSessionTools: an agent's MCP client (the official Go SDK, over
// stdio to the real binary) drives agent-sandbox's tools through a sandbox's
// life, and gets agent-sandbox's answers: the budget rule's results, base64
// files byte-exact, a listing capped by max_entries, exists false for a
// missing path, the status names, NOT_FOUND once deleted.
func TestMCPSessionTools(t *testing.T) {
	requireRoot(t)
	socket := startSupervisor(t)
	bin := buildExecfarm(t)
	cs, _ := mcpSession(t, bin, []string{"SANDBOX_SOCKET_PATH=" + socket}, make(chan string, 1))
	defer cs.Close()

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
	}
	for _, want := range append(sessionTools, "runSandbox") {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(res.Resources) != 1 || res.Resources[0].Name != "get_sandboxes" {
		t.Fatalf("resources/list = %v, %v; want get_sandboxes", res, err)
	}

	var created mcpbridge.CreateSandboxOutput
	text := mustTool(t, cs, "create_sandbox", map[string]any{"warmpool": "default", "namespace": "default", "labels": map[string]string{"task": "compat"}}, &created)
	id := created.SandboxClaimName
	if id == "" || text != id || created.Warmpool != "default" || created.ExpiresAt < float64(time.Now().Add(200*time.Second).Unix()) {
		t.Fatalf("create_sandbox = %+v (text %q)", created, text)
	}
	if got := sandboxesOf(t, cs); !slices.Equal(got, []string{id}) {
		t.Errorf("get_sandboxes = %v, want [%s]", got, id)
	}

	// 10 000 characters on each stream in 128: agent-sandbox's rule, exactly.
	var ex mcpbridge.ExecuteCommandOutput
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "namespace": "default", "max_output_chars": 128,
		"command": "head -c 10000 /dev/zero | tr '\\0' o; head -c 10000 /dev/zero | tr '\\0' e >&2"}, &ex)
	wantO, wantE := mcpbridge.Budget(strings.Repeat("o", 10000), strings.Repeat("e", 10000), 128)
	if ex.ExitCode != 0 || ex.Stdout != wantO.Text || ex.Stderr != wantE.Text || ex.StdoutTotalChars != 10000 || ex.StderrTotalChars != 10000 ||
		!ex.StdoutTruncated || !ex.StderrTruncated || ex.TerminationReason != "exited" {
		t.Errorf("execute_command = %+v", ex)
	}
	// Both streams oversized: 64 characters each, the marker's 35
	// included, 14 kept at the start and 15 at the end.
	if ex.Stdout != strings.Repeat("o", 14)+"\n[... 9971 characters omitted ...]\n"+strings.Repeat("o", 15) {
		t.Errorf("stdout = %q", ex.Stdout)
	}
	// Short output is unchanged; the exit code is kept.
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "echo out; echo err >&2; exit 3"}, &ex)
	if ex.ExitCode != 3 || ex.Stdout != "out\n" || ex.Stderr != "err\n" || ex.StdoutTruncated || ex.StdoutTotalChars != 4 {
		t.Errorf("exit 3: %+v", ex)
	}
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "sleep 30", "timeout": 1}, &ex)
	if ex.ExitCode != 124 || ex.TerminationReason != "timeout" {
		t.Errorf("timeout 1: %+v", ex)
	}

	// A binary file through base64, both ways, byte-exact.
	blob := make([]byte, 70_000)
	_, _ = rand.Read(blob)
	for i := range 256 {
		blob[i] = byte(i)
	}
	var up mcpbridge.UploadFileOutput
	text = mustTool(t, cs, "upload_file", map[string]any{"sandbox_claim_name": id, "path": "data/blob.bin", "content": base64.StdEncoding.EncodeToString(blob), "binary": true}, &up)
	if up.BytesWritten != int64(len(blob)) || text != fmt.Sprint(len(blob)) || up.Path != "/workspace/data/blob.bin" {
		t.Errorf("upload_file = %+v (text %q)", up, text)
	}
	sum := sha256.Sum256(blob)
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "sha256sum data/blob.bin"}, &ex)
	if !strings.HasPrefix(ex.Stdout, hex.EncodeToString(sum[:])) {
		t.Errorf("sha256sum in the sandbox: %q", ex.Stdout)
	}
	var down mcpbridge.DownloadFileOutput
	mustTool(t, cs, "download_file", map[string]any{"sandbox_claim_name": id, "path": "/workspace/data/blob.bin", "binary": true}, &down)
	got, err := base64.StdEncoding.DecodeString(down.Content)
	if err != nil || string(got) != string(blob) || down.BytesRead != int64(len(blob)) {
		t.Errorf("download_file binary: %d bytes (%v), bytes_read %d; not the upload", len(got), err, down.BytesRead)
	}
	mustTool(t, cs, "upload_file", map[string]any{"sandbox_claim_name": id, "path": "note.txt", "content": "héllo\n"}, nil)
	mustTool(t, cs, "download_file", map[string]any{"sandbox_claim_name": id, "path": "note.txt"}, &down)
	if down.Content != "héllo\n" || down.BytesRead != 7 {
		t.Errorf("download_file text = %+v", down)
	}
	if toolErr, _ := tool(t, cs, "download_file", map[string]any{"sandbox_claim_name": id, "path": "data/blob.bin"}, nil); !strings.Contains(toolErr, "binary true") {
		t.Errorf("a binary file as text: %q", toolErr)
	}

	// A directory of 25 entries listed 10 at a time.
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "mkdir many && for i in $(seq 10 34); do echo $i > many/f$i; done && mkdir many/sub"}, nil)
	var ls mcpbridge.ListFilesOutput
	mustTool(t, cs, "list_files", map[string]any{"sandbox_claim_name": id, "path": "many", "max_entries": 10}, &ls)
	if len(ls.Entries) != 10 || ls.TotalEntries != 26 || !ls.Truncated || ls.Entries[0].Name != "f10" || ls.Entries[0].Type != "file" ||
		ls.Entries[0].Size != 3 || ls.Entries[0].ModTime < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("list_files max 10 = %+v", ls)
	}
	mustTool(t, cs, "list_files", map[string]any{"sandbox_claim_name": id, "path": "many"}, &ls)
	if len(ls.Entries) != 26 || ls.Truncated || ls.Entries[25].Name != "sub" || ls.Entries[25].Type != "directory" {
		t.Errorf("list_files = %d entries, truncated %v", len(ls.Entries), ls.Truncated)
	}

	var fe mcpbridge.FileExistsOutput
	mustTool(t, cs, "file_exists", map[string]any{"sandbox_claim_name": id, "path": "no/such/file"}, &fe)
	if fe.Exists {
		t.Errorf("file_exists of a missing path = %+v", fe)
	}
	mustTool(t, cs, "file_exists", map[string]any{"sandbox_claim_name": id, "path": "many/sub"}, &fe)
	if !fe.Exists || fe.Type != "directory" {
		t.Errorf("file_exists of a directory = %+v", fe)
	}
	var st mcpbridge.SandboxStatusOutput
	mustTool(t, cs, "get_sandbox_status", map[string]any{"sandbox_claim_name": id, "namespace": "default"}, &st)
	if st.Status != "SandboxReady" || !st.Ready {
		t.Errorf("get_sandbox_status = %+v", st)
	}

	// Files over the MCP bound are refused, naming the way around.
	big := base64.StdEncoding.EncodeToString(make([]byte, mcpbridge.MaxFileBytes+1))
	if toolErr, _ := tool(t, cs, "upload_file", map[string]any{"sandbox_claim_name": id, "path": "big", "content": big, "binary": true}, nil); !strings.HasPrefix(toolErr, "INVALID_ARGUMENT") || !strings.Contains(toolErr, "execfarm cp") {
		t.Errorf("upload of 1 MiB + 1: %q", toolErr)
	}
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": fmt.Sprintf("head -c %d /dev/zero > big", mcpbridge.MaxFileBytes+1)}, nil)
	if toolErr, _ := tool(t, cs, "download_file", map[string]any{"sandbox_claim_name": id, "path": "big", "binary": true}, nil); !strings.HasPrefix(toolErr, "FAILED_PRECONDITION") || !strings.Contains(toolErr, "gRPC file API") {
		t.Errorf("download of 1 MiB + 1: %q", toolErr)
	}
	mustTool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": fmt.Sprintf("head -c %d /dev/zero > max", mcpbridge.MaxFileBytes)}, nil)
	mustTool(t, cs, "download_file", map[string]any{"sandbox_claim_name": id, "path": "max", "binary": true}, &down)
	if down.BytesRead != mcpbridge.MaxFileBytes {
		t.Errorf("download of 1 MiB: %d bytes", down.BytesRead)
	}

	var del mcpbridge.DeleteSandboxOutput
	mustTool(t, cs, "delete_sandbox", map[string]any{"sandbox_claim_name": id, "namespace": "default"}, &del)
	if !del.Deleted {
		t.Errorf("delete_sandbox = %+v", del)
	}
	mustTool(t, cs, "get_sandbox_status", map[string]any{"sandbox_claim_name": id}, &st)
	if st.Status != "SandboxNotFound" || st.Ready {
		t.Errorf("status after delete = %+v", st)
	}
	if toolErr, _ := tool(t, cs, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "true"}, nil); !strings.HasPrefix(toolErr, "NOT_FOUND") {
		t.Errorf("execute_command after delete: %q", toolErr)
	}
	if n := sandboxDirs(t, socket); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
}

// TestMCPClientsAreIsolated: two stdio clients of one supervisor see
// only their own sandboxes, and anything on another's is NOT_FOUND;
// when the first exits (stdin closed), its sandboxes are deleted and the
// second's are untouched; SIGTERM and SIGHUP end a client the same way.
func TestMCPClientsAreIsolated(t *testing.T) {
	requireRoot(t)
	socket := startSupervisor(t)
	bin := buildExecfarm(t)
	env := []string{"SANDBOX_SOCKET_PATH=" + socket}
	a, cmdA := mcpSession(t, bin, env, make(chan string, 1))
	b, _ := mcpSession(t, bin, env, make(chan string, 1))
	defer b.Close()

	create := func(cs *mcp.ClientSession) string {
		var out mcpbridge.CreateSandboxOutput
		mustTool(t, cs, "create_sandbox", map[string]any{}, &out)
		return out.SandboxClaimName
	}
	a1, a2, b1 := create(a), create(a), create(b)
	mustTool(t, a, "upload_file", map[string]any{"sandbox_claim_name": a1, "path": "secret", "content": "a's"}, nil)
	if got, want := sandboxesOf(t, a), sorted(a1, a2); !slices.Equal(got, want) {
		t.Errorf("a's get_sandboxes = %v, want %v", got, want)
	}
	if got := sandboxesOf(t, b); !slices.Equal(got, []string{b1}) {
		t.Errorf("b's get_sandboxes = %v, want [%s]", got, b1)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_command", map[string]any{"command": "cat secret"}},
		{"upload_file", map[string]any{"path": "secret", "content": "b's"}},
		{"download_file", map[string]any{"path": "secret"}},
		{"list_files", map[string]any{"path": "."}},
		{"file_exists", map[string]any{"path": "secret"}},
		{"delete_sandbox", map[string]any{}},
	} {
		c.args["sandbox_claim_name"] = a1
		c.args["namespace"] = "default"
		if toolErr, _ := tool(t, b, c.tool, c.args, nil); !strings.HasPrefix(toolErr, "NOT_FOUND") {
			t.Errorf("b's %s on a's sandbox: %q, want NOT_FOUND", c.tool, toolErr)
		}
	}
	var st mcpbridge.SandboxStatusOutput
	mustTool(t, b, "get_sandbox_status", map[string]any{"sandbox_claim_name": a1}, &st)
	if st.Status != "SandboxNotFound" {
		t.Errorf("b's get_sandbox_status of a's = %+v", st)
	}
	// a's sandbox is untouched.
	var down mcpbridge.DownloadFileOutput
	mustTool(t, a, "download_file", map[string]any{"sandbox_claim_name": a1, "path": "secret"}, &down)
	if down.Content != "a's" {
		t.Errorf("a's file now holds %q", down.Content)
	}

	// a exits: its sandboxes are deleted, b's are not.
	if n := sandboxDirs(t, socket); n != 3 {
		t.Fatalf("%d sandboxes before a exits, want 3", n)
	}
	if err := a.Close(); err != nil {
		t.Errorf("close a: %v", err)
	}
	if st := cmdA.ProcessState; st == nil || !st.Success() {
		t.Errorf("a exited with %v", st)
	}
	if n := sandboxDirs(t, socket); n != 1 {
		t.Errorf("%d sandboxes after a exited, want b's one", n)
	}
	var ex mcpbridge.ExecuteCommandOutput
	mustTool(t, b, "execute_command", map[string]any{"sandbox_claim_name": b1, "command": "echo still here"}, &ex)
	if ex.Stdout != "still here\n" {
		t.Errorf("b's sandbox after a exited: %+v", ex)
	}
	if got := sandboxesOf(t, b); !slices.Equal(got, []string{b1}) {
		t.Errorf("b's get_sandboxes after a exited = %v", got)
	}
	// A signal ends a client as a closed stdin does.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		c, cmdC := mcpSession(t, bin, env, make(chan string, 1))
		create(c)
		if n := sandboxDirs(t, socket); n != 2 {
			t.Fatalf("%v: %d sandboxes, want b's and c's", sig, n)
		}
		if err := cmdC.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		// The bridge deletes its sandboxes, then exits, which closes the
		// session.
		_ = c.Wait()
		if n := sandboxDirs(t, socket); n != 1 {
			t.Errorf("after %v: %d sandboxes, want b's one", sig, n)
		}
		_ = c.Close()
		if st := cmdC.ProcessState; st == nil || !st.Success() {
			t.Errorf("after %v the client exited with %v, want 0", sig, st)
		}
	}

	// SIGKILL leaves the bridge no chance to delete its sandbox, whose
	// client key died with it: the local user (the CLI, no client key)
	// lists it, marked as a client's, and deletes it; b still does not
	// see it.
	k, cmdK := mcpSession(t, bin, env, make(chan string, 1))
	k1 := create(k)
	if err := cmdK.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = k.Close()
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("execfarm %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if n := sandboxDirs(t, socket); n != 2 {
		t.Errorf("after SIGKILL: %d sandboxes, want b's and the killed client's", n)
	}
	if got := sandboxesOf(t, b); !slices.Equal(got, []string{b1}) {
		t.Errorf("b's get_sandboxes with the killed client's sandbox live = %v", got)
	}
	if out := cli("sandbox", "ls"); !regexp.MustCompile(regexp.QuoteMeta(k1) + `\s.*\sclient:[0-9a-f]{32}@local\s`).MatchString(out) {
		t.Errorf("sandbox ls does not show the killed client's sandbox %s as a client's:\n%s", k1, out)
	}
	cli("sandbox", "rm", k1)
	if n := sandboxDirs(t, socket); n != 1 {
		t.Errorf("after sandbox rm: %d sandboxes, want b's one", n)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// serveMCPHTTP starts `execfarm mcp --http 127.0.0.1:0` with args and
// returns its endpoint, read from its log; it is stopped (SIGTERM) at
// cleanup.
func serveMCPHTTP(t *testing.T, bin, socket string, args ...string) (endpoint string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "SANDBOX_SOCKET_PATH=" + socket}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := regexp.MustCompile(`address=(https?://127\.0\.0\.1:[0-9]+/)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(os.Stderr, stderr) }()
			return m[1], cmd
		}
		fmt.Fprintln(os.Stderr, sc.Text())
	}
	t.Fatalf("execfarm mcp --http exited before serving: %v", sc.Err())
	return "", nil
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// httpSession connects the SDK's Streamable HTTP client to endpoint with
// token ("" = none).
func httpSession(endpoint, token string) (*mcp.ClientSession, error) {
	return httpSessionOver(endpoint, token, http.DefaultTransport)
}

// httpSessionOver is httpSession through rt.
func httpSessionOver(endpoint, token string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: rt}
	if token != "" {
		hc.Transport = bearer{token, rt}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "execfarm-compat-http", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
}

// TestMCPOverHTTP: `execfarm mcp --http` with a token file refuses a
// client without a token (or with a wrong one) and serves the same tools
// to one with a token; each token is its own client, with its own
// sandboxes and cached scripts; a token's sessions past its share of --max-sessions and requests
// over the message bound are refused; a non-loopback address without
// tokens does not start.
func TestMCPOverHTTP(t *testing.T) {
	requireRoot(t)
	socket := startSupervisorWithCache(t)
	bin := buildExecfarm(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const alice, bob = "alice-mcp-token-0123456789abcdef", "bob-mcp-token-0123456789abcdef01"
	if err := os.WriteFile(tokens, []byte("alice "+alice+"\nbob "+bob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint, _ := serveMCPHTTP(t, bin, socket, "--http-token-file", tokens, "--max-sessions", "8")

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(token, body string) int {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The probes, without a token.
	for path, want := range map[string]string{"healthz": `{"live":true}`, "readyz": `{"ready":true}`} {
		resp, err := http.Get(endpoint + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != want {
			t.Errorf("GET /%s: HTTP %d %q, want 200 %s", path, resp.StatusCode, b, want)
		}
	}
	for _, tok := range []string{"", "not-a-token-0123456789abcdef"} {
		if code := post(tok, initialize); code != http.StatusUnauthorized {
			t.Errorf("initialize with token %q: HTTP %d, want 401", tok, code)
		}
	}
	if _, err := httpSession(endpoint, ""); err == nil {
		t.Error("the SDK client connected without a token")
	}

	a, err := httpSession(endpoint, alice)
	if err != nil {
		t.Fatalf("connect with alice's token: %v", err)
	}
	defer a.Close()
	var created mcpbridge.CreateSandboxOutput
	mustTool(t, a, "create_sandbox", map[string]any{"namespace": "default"}, &created)
	id := created.SandboxClaimName
	var ex mcpbridge.ExecuteCommandOutput
	mustTool(t, a, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "echo over http"}, &ex)
	if ex.Stdout != "over http\n" || ex.ExitCode != 0 {
		t.Errorf("execute_command over HTTP = %+v", ex)
	}
	mustTool(t, a, "upload_file", map[string]any{"sandbox_claim_name": id, "path": "f", "content": base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255}), "binary": true}, nil)
	var down mcpbridge.DownloadFileOutput
	mustTool(t, a, "download_file", map[string]any{"sandbox_claim_name": id, "path": "f", "binary": true}, &down)
	if down.Content != "AAEC/w==" {
		t.Errorf("download_file over HTTP = %+v", down)
	}
	var fe mcpbridge.FileExistsOutput
	mustTool(t, a, "file_exists", map[string]any{"sandbox_claim_name": id, "path": "nope"}, &fe)
	if fe.Exists {
		t.Error("file_exists of a missing path over HTTP")
	}

	// bob is another client: alice's sandbox is not his.
	b, err := httpSession(endpoint, bob)
	if err != nil {
		t.Fatal(err)
	}
	if toolErr, _ := tool(t, b, "execute_command", map[string]any{"sandbox_claim_name": id, "command": "true"}, nil); !strings.HasPrefix(toolErr, "NOT_FOUND") {
		t.Errorf("bob's execute_command on alice's sandbox: %q", toolErr)
	}
	if got := sandboxesOf(t, b); len(got) != 0 {
		t.Errorf("bob's get_sandboxes = %v", got)
	}
	// A second session of alice's token is the same client; her
	// sandboxes outlive a session.
	a2, err := httpSession(endpoint, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got := sandboxesOf(t, a2); !slices.Equal(got, []string{id}) {
		t.Errorf("alice's second session lists %v, want [%s]", got, id)
	}
	// alice holds her token's share of the 8 sessions (a quarter, 2): a
	// third of hers is refused while bob still connects, until one of
	// hers closes.
	if code := post(alice, initialize); code != http.StatusServiceUnavailable {
		t.Errorf("alice's 3rd session: HTTP %d, want 503", code)
	}
	b2, err := httpSession(endpoint, bob)
	if err != nil {
		t.Fatalf("bob's 2nd session while alice holds her share: %v", err)
	}
	b2.Close()
	if err := a.Close(); err != nil {
		t.Errorf("close alice's session: %v", err)
	}
	a, err = httpSession(endpoint, alice)
	if err != nil {
		t.Fatalf("alice's session once one of hers closed: %v", err)
	}
	b.Close()
	a2.Close()
	if n := sandboxDirs(t, socket); n != 1 {
		t.Errorf("%d sandboxes after alice's second session closed, want hers", n)
	}
	// A message over the bound is refused before it is read whole.
	huge := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", mcpbridge.MaxMessageBytes) + `"}}`
	if code := post(alice, huge); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a message over %d bytes: HTTP %d, want 413", mcpbridge.MaxMessageBytes, code)
	}
	mustTool(t, a, "delete_sandbox", map[string]any{"sandbox_claim_name": id}, nil)

	// Nor are alice's cached scripts bob's: an ambiguous partial name does
	// not list hers, and her script's name is not found, as a name no one
	// saved. (The red-team report: bob listed alice's script names through
	// "script-", then ran one and read the secret in its code.) After the
	// count of sandboxes above: the runs' single-use sandboxes are
	// destroyed after their results are published.
	b, err = httpSession(endpoint, bob)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const secret = "// alice private\nconsole.log('alice secret','ALICE-KEY-42')"
	var ran mcpbridge.Output
	mustTool(t, a, "runSandbox", map[string]any{"code": secret}, &ran)
	if ran.Cached == "" || ran.Output != "alice secret ALICE-KEY-42\n" {
		t.Fatalf("alice's runSandbox = %+v; want her output and a cached name", ran)
	}
	mustTool(t, b, "runSandbox", map[string]any{"code": "// bob's\nconsole.log(1)"}, nil)
	mustTool(t, b, "runSandbox", map[string]any{"code": "// bob's too\nconsole.log(2)"}, nil)
	never := "script-2000-01-01T00-00-00-0123456789ab.ts"
	unknown, _ := tool(t, b, "runSandbox", map[string]any{"cached": never}, nil)
	if !strings.HasPrefix(unknown, "NOT_FOUND") {
		t.Fatalf("bob's runSandbox of a name never saved: %q; want NOT_FOUND", unknown)
	}
	for _, name := range []string{ran.Cached, strings.TrimSuffix(ran.Cached, ".ts")[len("script-2000-01-01T00-00-00-"):]} {
		if toolErr, _ := tool(t, b, "runSandbox", map[string]any{"cached": name}, nil); toolErr != strings.ReplaceAll(unknown, never, name) {
			t.Errorf("bob's runSandbox of alice's %q: %q; want %q", name, toolErr, strings.ReplaceAll(unknown, never, name))
		}
	}
	if toolErr, _ := tool(t, b, "runSandbox", map[string]any{"cached": "script-"}, nil); !strings.Contains(toolErr, "several") || strings.Contains(toolErr, ran.Cached) {
		t.Errorf("bob's ambiguous runSandbox: %q; want his two names alone", toolErr)
	}
	// A second session of alice's token is the same client: her script
	// is hers there too.
	a2, err = httpSession(endpoint, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	var again mcpbridge.Output
	mustTool(t, a2, "runSandbox", map[string]any{"cached": ran.Cached}, &again)
	if again.Output != ran.Output {
		t.Errorf("alice's second session runs her cached script: %+v", again)
	}

	// Off loopback, tokens and TLS are required.
	out, err := exec.Command(bin, "mcp", "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs bearer tokens") {
		t.Errorf("mcp --http 0.0.0.0:0 without tokens: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "mcp", "--http", "0.0.0.0:0", "--http-token-file", tokens).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--http-tls-cert") {
		t.Errorf("mcp --http 0.0.0.0:0 with tokens, without TLS: %v\n%s", err, out)
	}
}

// TestMCPOverHTTPS: `execfarm mcp --http` with --http-tls-cert and
// --http-tls-key serves https (its log says so): the SDK client, trusting
// the certificate, lists the tools with a token; a plaintext client does
// not connect. Listing tools needs no supervisor, so none is started (the
// socket it is pointed at does not exist) and the test needs no root.
func TestMCPOverHTTPS(t *testing.T) {
	bin := buildExecfarm(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const alice = "alice-mcp-token-0123456789abcdef"
	if err := os.WriteFile(tokens, []byte("alice "+alice+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := selfSignedLoopback(t, dir)
	endpoint, _ := serveMCPHTTP(t, bin, filepath.Join(dir, "no-supervisor.sock"), "--http-token-file", tokens,
		"--http-tls-cert", filepath.Join(dir, "tls.crt"), "--http-tls-key", filepath.Join(dir, "tls.key"))
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("endpoint %s: want https", endpoint)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	rt := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer rt.CloseIdleConnections()
	cs, err := httpSessionOver(endpoint, alice, rt)
	if err != nil {
		t.Fatalf("connect over https: %v", err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "runSandbox") || !slices.Contains(names, "create_sandbox") {
		t.Errorf("tools over https: %v", names)
	}
	plain := &http.Transport{}
	defer plain.CloseIdleConnections()
	if s, err := httpSessionOver("http://"+strings.TrimPrefix(endpoint, "https://"), alice, plain); err == nil {
		s.Close()
		t.Error("a plaintext client connected to the TLS port")
	}
}

// selfSignedLoopback writes a self-signed certificate for 127.0.0.1 and
// its key into dir as tls.crt and tls.key, and returns the certificate.
func selfSignedLoopback(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	c := testcert.Loopback(t, 1, "execfarm compat")
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), c.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), c.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return c.Cert
}

// TestMCPOverHTTPSessionsWithoutTokens: on loopback without tokens, each
// MCP session is a client of its own, whose sandboxes are deleted when it
// closes.
func TestMCPOverHTTPSessionsWithoutTokens(t *testing.T) {
	requireRoot(t)
	socket := startSupervisor(t)
	bin := buildExecfarm(t)
	endpoint, _ := serveMCPHTTP(t, bin, socket)
	a, err := httpSession(endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := httpSession(endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var created mcpbridge.CreateSandboxOutput
	mustTool(t, a, "create_sandbox", map[string]any{}, &created)
	mustTool(t, b, "create_sandbox", map[string]any{}, nil)
	if got := sandboxesOf(t, b); len(got) != 1 || got[0] == created.SandboxClaimName {
		t.Errorf("b's get_sandboxes = %v (a's is %s)", got, created.SandboxClaimName)
	}
	if toolErr, _ := tool(t, b, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxClaimName}, nil); !strings.HasPrefix(toolErr, "NOT_FOUND") {
		t.Errorf("b's delete of a's: %q", toolErr)
	}
	if n := sandboxDirs(t, socket); n != 2 {
		t.Fatalf("%d sandboxes, want 2", n)
	}
	// Closing a's session (HTTP DELETE, answered once the session's
	// sandboxes are gone) deletes a's sandbox, not b's.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sandboxDirs(t, socket); n != 1 {
		t.Fatalf("%d sandboxes after a's session closed, want b's", n)
	}
	if got := sandboxesOf(t, b); len(got) != 1 {
		t.Errorf("b's sandboxes after a's session closed: %v", got)
	}
}

// TestMCPStdioScriptsOutliveTheSession: a stdio client of `execfarm mcp`
// (a process per agent session, each a client of its own for sandboxes
// and executions) saves its new scripts as the local user's, so that the
// next session runs them by name, as with ProDisco's own server
// (TestMCPClientsAreIsolated: its sandboxes stay its own).
func TestMCPStdioScriptsOutliveTheSession(t *testing.T) {
	requireRoot(t)
	socket := startSupervisorWithCache(t)
	bin := buildExecfarm(t)
	env := []string{"SANDBOX_SOCKET_PATH=" + socket}
	first, _ := mcpSession(t, bin, env, make(chan string, 1))
	ran := callTool(t, first, map[string]any{"code": "console.log('kept between sessions')"}, nil)
	if ran.Cached == "" {
		t.Fatalf("first session's runSandbox = %+v; want a cached name", ran)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, _ := mcpSession(t, bin, env, make(chan string, 1))
	defer second.Close()
	again := callTool(t, second, map[string]any{"cached": ran.Cached}, nil)
	if again.Output != "kept between sessions\n" {
		t.Errorf("the next session runs the cached script %s: %+v", ran.Cached, again)
	}
}

// startSupervisorWithCache is startSupervisor with a script cache in a
// temporary directory.
func startSupervisorWithCache(t *testing.T) string {
	t.Helper()
	return startSupervisorWith(t, func(cfg *supervisor.Config) {
		store, err := cache.OpenStore(cache.Config{Dir: filepath.Join(t.TempDir(), "scripts")})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cache = store
	})
}
