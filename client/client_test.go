//go:build linux

package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/client"
	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/test/testbin"
)

// maxSandboxes is the shared supervisor's session sandbox limit, low so
// that TestErrorResourceExhausted reaches it.
const maxSandboxes = 2

// shared is the embedded supervisor of the tests (nil without root);
// skip says why there is none.
var (
	shared *client.Client
	skip   string
)

// TestMain fails the run if the embedded supervisors leave goroutines or
// descriptors behind once closed (beyond the process-wide ones of the
// sandbox spawner and the transformer).
func TestMain(m *testing.M) {
	leakcheck.Main(suite{m}, leakcheck.IgnoreGoroutines(sandbox.ProcessGoroutines...), leakcheck.IgnoreFDs(sandbox.ProcessFDs), leakcheck.IgnoreFDs(transformer.ProcessFDs))
}

type suite struct{ m *testing.M }

func (s suite) Run() int {
	if os.Geteuid() != 0 {
		skip = "needs root: an embedded supervisor creates namespaces and cgroups"
		return s.m.Run()
	}
	// The worker must be executable by the sandbox's unprivileged root:
	// a 0755 directory, not t.TempDir's 0700 parent.
	dir, err := os.MkdirTemp("", "execfarm-client-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := testbin.Build(dir, testbin.Sandbox...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// For Example, which connects as a program would: nothing
	// configured, the worker found through EXECFARM_WORKER.
	os.Setenv("EXECFARM_WORKER", filepath.Join(dir, "execfarm-worker"))
	for _, k := range []string{"SANDBOX_SOCKET_PATH", "SANDBOX_USE_TCP", "SANDBOX_TCP_HOST", "SANDBOX_TCP_PORT", "SANDBOX_TRANSPORT_MODE", "EXECFARM_TOKEN", "EXECFARM_TOKEN_FILE"} {
		os.Unsetenv(k)
	}
	shared, err = client.Connect(context.Background(), client.Options{Mode: client.Embedded, Embed: client.EmbedOptions{
		Version: "client-test",
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: hclog.Warn, Output: os.Stderr}),
		Configure: func(cfg *supervisor.Config) {
			cfg.Sessions.MaxSandboxes, cfg.Sessions.MaxPerPrincipal = maxSandboxes, maxSandboxes
		},
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := s.m.Run()
	if err := shared.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		code = 1
	}
	return code
}

func need(t *testing.T) *client.Client {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	return shared
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newSandbox(t *testing.T, c *client.Client, opts client.SandboxOptions) *client.Sandbox {
	t.Helper()
	sbx, err := c.CreateSandbox(ctxFor(t), opts)
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	t.Cleanup(func() {
		if _, err := sbx.Delete(context.Background()); err != nil {
			var nf *client.NotFoundError
			if !errors.As(err, &nf) {
				t.Errorf("Delete: %v", err)
			}
		}
	})
	return sbx
}

func TestRun(t *testing.T) {
	c := need(t)
	r, err := c.Run(ctxFor(t), "print(6 * 7)", client.RunOptions{Runtime: client.Python, Limits: client.Limits{Memory: 256 << 20, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || string(r.Stdout) != "42\n" || r.TerminationReason != "exited" || r.State != "completed" || !r.Success || r.ExecutionID == "" {
		t.Fatalf("Run = %+v", r)
	}
	if got := r.Outcome.GetEffectiveLimits().GetMaxMemoryBytes(); got != 256<<20 {
		t.Errorf("effective memory limit %d, want %d", got, 256<<20)
	}
	r, err = c.Run(ctxFor(t), "echo out; echo err >&2; exit 3", client.RunOptions{Runtime: client.Shell, Env: map[string]string{"X": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 3 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.Success || r.State != "failed" {
		t.Fatalf("Run exit 3 = %+v", r)
	}
	r, err = c.Run(ctxFor(t), "cat; echo $X", client.RunOptions{Runtime: client.Shell, Env: map[string]string{"X": "y"}, Stdin: []byte("in\n")})
	if err != nil || string(r.Stdout) != "in\ny\n" {
		t.Fatalf("Run with stdin and env = %+v, %v", r, err)
	}
}

// TestRunStreamsBeforeEnd: a chunk reaches OnStdout while the program
// still runs: it never ends by itself, and the test cancels it once the
// chunk came (then Run returns a *CanceledError).
func TestRunStreamsBeforeEnd(t *testing.T) {
	c := need(t)
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	got := make(chan string, 1)
	_, err := c.Run(ctx, "echo first; exec sleep 600", client.RunOptions{Runtime: client.Shell, OnStdout: func(chunk []byte) {
		select {
		case got <- string(chunk):
		default:
		}
		cancel()
	}})
	var ce *client.CanceledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run cancelled after the first chunk: %v (%T), want *CanceledError", err, err)
	}
	select {
	case s := <-got:
		if s != "first\n" {
			t.Fatalf("first chunk %q", s)
		}
	default:
		t.Fatal("no chunk reached OnStdout")
	}
}

// TestExecStreamsBeforeEnd: an exec's first chunk reaches OnStdout while
// it waits for a file that the test writes only then.
func TestExecStreamsBeforeEnd(t *testing.T) {
	c := need(t)
	sbx := newSandbox(t, c, client.SandboxOptions{Runtime: client.Shell, TTL: 10 * time.Minute, Labels: map[string]string{"task": "demo"}})
	ctx := ctxFor(t)
	var chunks []string
	r, err := sbx.Exec(ctx, "echo first; while [ ! -e go ]; do sleep 0.01; done; echo second", client.ExecOptions{OnStdout: func(chunk []byte) {
		chunks = append(chunks, string(chunk))
		if len(chunks) == 1 {
			// The program waits for this: it cannot have ended.
			if err := sbx.Files().Write(ctx, "go", nil); err != nil {
				t.Errorf("write go: %v", err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 || chunks[0] != "first\n" || strings.Join(chunks, "") != "first\nsecond\n" || r.ExitCode != 0 || string(r.Stdout) != "first\nsecond\n" {
		t.Fatalf("chunks %q, result %+v", chunks, r)
	}
}

func TestSandboxFiles(t *testing.T) {
	c := need(t)
	sbx := newSandbox(t, c, client.SandboxOptions{Runtime: client.Shell, TTL: 10 * time.Minute, Labels: map[string]string{"task": "files"}})
	ctx := ctxFor(t)
	if err := sbx.Files().Write(ctx, "in/data.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	out, err := sbx.Exec(ctx, "tr a-z A-Z < in/data.txt", client.ExecOptions{})
	if err != nil || out.ExitCode != 0 || string(out.Stdout) != "HELLO" {
		t.Fatalf("exec = %+v, %v", out, err)
	}
	if b, err := sbx.Files().Read(ctx, "in/data.txt"); err != nil || string(b) != "hello" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	// Several chunks and a part of one, each way.
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*client.ChunkSize+1000)/16)
	n, err := sbx.Files().WriteFrom(ctx, "big.bin", bytes.NewReader(data), 0o600)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("WriteFrom = %d, %v", n, err)
	}
	h := sha256.New()
	info, n, err := sbx.Files().ReadTo(ctx, "big.bin", h)
	if err != nil || n != int64(len(data)) || info.GetSize() != int64(len(data)) || info.GetMode()&0o777 != 0o600 {
		t.Fatalf("ReadTo = %v, %d, %v", info, n, err)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("read back differs")
	}
	if _, ok, err := sbx.Files().Stat(ctx, "in/data.txt"); err != nil || !ok {
		t.Fatalf("Stat = %v, %v", ok, err)
	}
	if err := sbx.Files().Mkdir(ctx, "a/b", true); err != nil {
		t.Fatal(err)
	}
	ls, err := sbx.Files().List(ctx, ".")
	var names []string
	for _, e := range ls.GetEntries() {
		names = append(names, e.GetName())
	}
	if err != nil || strings.Join(names, " ") != "a big.bin in" {
		t.Fatalf("List = %v, %v", names, err)
	}
	if err := sbx.Files().Remove(ctx, "in", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := sbx.Files().Stat(ctx, "in/data.txt"); err != nil || ok {
		t.Fatalf("Stat after Remove = %v, %v", ok, err)
	}
	// Another client attaches to the sandbox by its id.
	list, err := c.ListSandboxes(ctx, map[string]string{"task": "files"})
	if err != nil || len(list) != 1 || list[0].GetSandboxId() != sbx.ID() {
		t.Fatalf("ListSandboxes = %v, %v", list, err)
	}
	if st, err := c.Sandbox(sbx.ID()).Status(ctx); err != nil || !st.GetReady() {
		t.Fatalf("Status = %v, %v", st, err)
	}
}

// TestMaxCollect: a Result holds at most MaxCollect bytes of a stream,
// and says it was cut; the callback sees every byte.
func TestMaxCollect(t *testing.T) {
	c := need(t)
	var seen int
	r, err := c.Run(ctxFor(t), "head -c 1000 /dev/zero | tr '\\0' x", client.RunOptions{Runtime: client.Shell, MaxCollect: 10,
		OnStdout: func(chunk []byte) { seen += len(chunk) }})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "xxxxxxxxxx" || !r.StdoutTruncated || seen != 1000 {
		t.Fatalf("Stdout %q, truncated %v, callback saw %d bytes", r.Stdout, r.StdoutTruncated, seen)
	}
	r, err = c.Run(ctxFor(t), "echo hi", client.RunOptions{Runtime: client.Shell, MaxCollect: -1})
	if err != nil || len(r.Stdout) != 0 || !r.StdoutTruncated {
		t.Fatalf("MaxCollect -1: %+v, %v", r, err)
	}
}

// Each error type, produced by the server (or the connection).

func TestErrorNotFound(t *testing.T) {
	c := need(t)
	sbx, err := c.CreateSandbox(ctxFor(t), client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sbx.Delete(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Sandbox(sbx.ID()).Exec(ctxFor(t), "true", client.ExecOptions{})
	var nf *client.NotFoundError
	if !errors.As(err, &nf) || nf.Reason != "SANDBOX_NOT_FOUND" || !strings.Contains(nf.Message, sbx.ID()) || client.Reason(err) != "SANDBOX_NOT_FOUND" {
		t.Fatalf("exec in a deleted sandbox: %v (%T)", err, err)
	}
	if status.Code(err) != codes.NotFound || !strings.HasPrefix(err.Error(), "NOT_FOUND: ") {
		t.Fatalf("status.Code %v, Error %q", status.Code(err), err)
	}
}

func TestErrorInvalidArgument(t *testing.T) {
	c := need(t)
	_, err := c.Run(ctxFor(t), "true", client.RunOptions{Runtime: client.Shell, Limits: client.Limits{Memory: 1 << 50}})
	var ia *client.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "limits.max_memory_bytes" || ia.Reason != "LIMIT_OUT_OF_RANGE" || ia.Message == "" {
		t.Fatalf("Run with 1 PiB: %v (%T %+v)", err, err, ia)
	}
	// Refused here, as the server would.
	_, err = c.Run(ctxFor(t), "true", client.RunOptions{Runtime: "cobol"})
	if !errors.As(err, &ia) || ia.Field != "runtime" || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Run with runtime cobol: %v", err)
	}
}

func TestErrorResourceExhausted(t *testing.T) {
	c := need(t)
	var err error
	var made []*client.Sandbox
	for i := 0; i <= maxSandboxes; i++ {
		var sbx *client.Sandbox
		if sbx, err = c.CreateSandbox(ctxFor(t), client.SandboxOptions{}); err != nil {
			break
		}
		made = append(made, sbx)
	}
	for _, sbx := range made {
		if _, err := sbx.Delete(ctxFor(t)); err != nil {
			t.Error(err)
		}
	}
	var re *client.ResourceExhaustedError
	if len(made) != maxSandboxes || !errors.As(err, &re) || re.Reason != "QUOTA_EXCEEDED" || re.RetryDelay <= 0 {
		t.Fatalf("sandbox %d of %d: %v (%T %+v)", len(made)+1, maxSandboxes, err, err, re)
	}
	// Without a retry delay: a file larger than the workspace.
	sbx := newSandbox(t, c, client.SandboxOptions{Runtime: client.Shell, Limits: client.Limits{Workspace: 1 << 20}})
	_, err = sbx.Files().WriteFrom(ctxFor(t), "big", io.LimitReader(zeros{}, 2<<20), 0)
	if !errors.As(err, &re) || re.Reason != "WORKSPACE_FULL" || re.RetryDelay != 0 {
		t.Fatalf("2 MiB into 1 MiB: %v (%T)", err, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestErrorUnauthenticated(t *testing.T) {
	c := need(t)
	tc := c.Transport()
	if tc.Token == "" {
		t.Fatal("the embedded supervisor has no token")
	}
	// The embedded supervisor's socket, without its token.
	other, err := client.Connect(ctxFor(t), client.Options{Mode: client.Server, Getenv: func(k string) string {
		return map[string]string{"SANDBOX_SOCKET_PATH": tc.SocketPath}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Run(ctxFor(t), "true", client.RunOptions{Runtime: client.Shell})
	var ue *client.UnauthenticatedError
	if !errors.As(err, &ue) || ue.Message == "" {
		t.Fatalf("Run without the token: %v (%T)", err, err)
	}
	// With it, from the environment: server mode.
	withToken, err := client.Connect(ctxFor(t), client.Options{Getenv: func(k string) string {
		return map[string]string{"SANDBOX_SOCKET_PATH": tc.SocketPath, "EXECFARM_TOKEN": tc.Token}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer withToken.Close()
	if withToken.Embedded() {
		t.Fatal("SANDBOX_SOCKET_PATH set: embedded")
	}
	if r, err := withToken.Run(ctxFor(t), "echo ok", client.RunOptions{Runtime: client.Shell}); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("Run with the token from EXECFARM_TOKEN: %+v, %v", r, err)
	}
}

func TestErrorPermissionDenied(t *testing.T) {
	c := need(t)
	sbx := newSandbox(t, c, client.SandboxOptions{Runtime: client.Shell})
	err := sbx.Files().Write(ctxFor(t), "/etc/evil", []byte("x"))
	var pe *client.PermissionDeniedError
	if !errors.As(err, &pe) || pe.Reason == "" {
		t.Fatalf("write into the read-only root: %v (%T)", err, err)
	}
}

func TestErrorUnavailable(t *testing.T) {
	need(t)
	sock := filepath.Join(t.TempDir(), "none.sock")
	c, err := client.Connect(ctxFor(t), client.Options{Getenv: func(k string) string {
		return map[string]string{"SANDBOX_SOCKET_PATH": sock}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Health(ctxFor(t))
	var ue *client.UnavailableError
	if !errors.As(err, &ue) || !ue.Unreachable() || ue.Address != "unix://"+sock {
		t.Fatalf("Health with no supervisor: %v (%T %+v)", err, err, ue)
	}
}

func TestErrorDeadlineExceeded(t *testing.T) {
	c := need(t)
	ctx, cancel := context.WithTimeout(ctxFor(t), 500*time.Millisecond)
	defer cancel()
	_, err := c.Run(ctx, "exec sleep 600", client.RunOptions{Runtime: client.Shell})
	var de *client.DeadlineExceededError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run past its deadline: %v (%T)", err, err)
	}
}

// TestConfigFromEnvironment: the CLI's variables configure the client,
// as transport.FromEnv reads them, and values given win.
func TestConfigFromEnvironment(t *testing.T) {
	env := map[string]string{"SANDBOX_TCP_HOST": "h.example", "SANDBOX_TCP_PORT": "7000", "SANDBOX_TRANSPORT_MODE": "tls", "EXECFARM_TOKEN_FILE": "/tok"}
	tc, err := client.Config(client.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil || !tc.UseTCP || tc.Address() != "h.example:7000" || tc.Mode != "tls" || tc.TokenPath != "/tok" {
		t.Fatalf("Config = %+v, %v", tc, err)
	}
	opts := client.Options{Getenv: func(k string) string { return env[k] }}
	opts.Transport.TCPPort = 8000
	if tc, _ := client.Config(opts); tc.Address() != "h.example:8000" {
		t.Fatalf("a given port: %s", tc.Address())
	}
	env["SANDBOX_TRANSPORT_MODE"] = "plain"
	if _, err := client.Config(client.Options{Getenv: func(k string) string { return env[k] }}); err == nil {
		t.Fatal("SANDBOX_TRANSPORT_MODE plain accepted")
	}
}

// TestEmbeddedCloseRemoves: Close stops an embedded supervisor and
// removes its socket's directory.
func TestEmbeddedCloseRemoves(t *testing.T) {
	need(t)
	c, err := client.Connect(ctxFor(t), client.Options{Mode: client.Embedded})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Embedded() {
		t.Fatal("Embedded() false")
	}
	dir := filepath.Dir(c.Transport().SocketPath)
	if h, err := c.Health(ctxFor(t)); err != nil || !h.GetHealthy() {
		t.Fatalf("Health = %v, %v", h, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after Close: %v", dir, err)
	}
}
