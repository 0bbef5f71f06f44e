//go:build linux

package prodisco

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/internal/leakcheck"
	pb "github.com/execfarm/execfarm/test/compat/prodiscopb"
	"github.com/execfarm/execfarm/test/testbin"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The servers' host uid windows: from 3<<30 + 2<<28 (above the hostile
// and load suites'), placed by the test process's pid, one window of
// serveSlots ranges per server.
const (
	rangeSize  = 65536
	serveSlots = 12 // execfarm serve --max-concurrent 2 --max-sandboxes 2: 2 + 2 + 8 ranges
)

func uidBase(server int) uint32 {
	return 3<<30 + 2<<28 + uint32(os.Getpid()%64)*2*serveSlots*rangeSize + uint32(server)*serveSlots*rangeSize
}

// server is one `execfarm serve` and a ProDisco client of it.
type server struct {
	proc   *testbin.Serve
	client pb.SandboxServiceClient
}

// startServers builds execfarm and starts one serve per default runtime.
func startServers(t *testing.T, runtimes ...string) map[string]*server {
	t.Helper()
	return startServersWith(t, nil, runtimes...)
}

// startServersWith is startServers, each serve with the flags too.
func startServersWith(t *testing.T, flags []string, runtimes ...string) map[string]*server {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the supervisor creates namespaces and cgroups")
	}
	bundle, err := filepath.Abs("../../../runtime/node/bundle")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bundle, "node_modules")); err != nil {
		t.Fatalf("node runtime bundle missing (make bundle): %v", err)
	}
	bin, err := os.MkdirTemp("", "efpd-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := testbin.Build(bin, append([]string{"execfarm"}, testbin.Sandbox...)...); err != nil {
		t.Fatal(err)
	}
	out := map[string]*server{}
	for i, rt := range runtimes {
		// Short: sandbox plugin sockets live below it (108-byte limit).
		dir, err := os.MkdirTemp("", "efpd-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, "s.sock")
		args := append([]string{"serve",
			"--socket", sock, "--state-dir", filepath.Join(dir, "state"),
			"--cgroup-parent", fmt.Sprintf("/execfarm-prodisco-%d-%d", os.Getpid(), i),
			"--uid-base", strconv.FormatUint(uint64(uidBase(i)), 10), "--max-concurrent", "2", "--max-sandboxes", "2",
			"--scripts-cache-dir", filepath.Join(dir, "scripts"), "--node-bundle", bundle,
			"--default-runtime", rt, "--grace", "2s", "--log-level", "warn"}, flags...)
		proc, err := testbin.StartServe(filepath.Join(bin, "execfarm"), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := proc.Stop(30 * time.Second); err != nil {
				t.Errorf("stop execfarm serve (%s): %v\n%s", rt, err, proc.Log(4096))
			}
		})
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		s := &server{proc: proc, client: pb.NewSandboxServiceClient(conn)}
		// The socket appears once serve listens; a serve that exits
		// (the host cannot isolate) ends the wait.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			select {
			case <-proc.Exited():
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err = s.client.HealthCheck(ctx, &pb.HealthCheckRequest{}, grpc.WaitForReady(true))
		cancel()
		if err != nil {
			t.Fatalf("execfarm serve --default-runtime %s never answered: %v\n%s", rt, err, proc.Log(4096))
		}
		out[rt] = s
	}
	return out
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func codeReq(code string) *pb.ExecuteRequest {
	return &pb.ExecuteRequest{Source: &pb.ExecuteRequest_Code{Code: code}}
}

// The program every case prints with: each console level once, in an
// order that interleaves stdout and stderr.
const consoleMix = `console.log("a", 1);
console.info("i");
console.error("e");
console.warn("w");
console.log("last");`

// wantMix is ProDisco's output for consoleMix: the lines in the order
// written, prefixed, joined by "\n", no trailing newline.
const wantMix = "a 1\n[INFO] i\n[ERROR] e\n[WARN] w\nlast"

// TestProDiscoFields drives goja and node (each the server's default, as
// a ProDisco client cannot name a runtime) with ProDisco's client and
// checks the fields as ProDisco's executor fills them.
func TestProDiscoFields(t *testing.T) {
	servers := startServers(t, "goja", "node")
	for _, rt := range []string{"goja", "node"} {
		c := servers[rt].client
		t.Run(rt, func(t *testing.T) {
			t.Run("Execute output", func(t *testing.T) {
				resp, err := c.Execute(callCtx(t), codeReq(consoleMix))
				if err != nil {
					t.Fatal(err)
				}
				if !resp.GetSuccess() || resp.GetOutput() != wantMix || resp.Error != nil {
					t.Fatalf("success %v output %q error %v; want true %q none", resp.GetSuccess(), resp.GetOutput(), resp.Error, wantMix)
				}
			})
			t.Run("Execute thrown error", func(t *testing.T) {
				resp, err := c.Execute(callCtx(t), codeReq("console.log(\"before\");\nthrow new Error(\"boom\");"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetSuccess() || resp.GetError() != "boom" || resp.GetOutput() != "before" {
					t.Fatalf("success %v error %q output %q; want false \"boom\" \"before\"", resp.GetSuccess(), resp.GetError(), resp.GetOutput())
				}
			})
			t.Run("ExecuteStream", func(t *testing.T) {
				chunks, res := stream(t, c, codeReq(consoleMix+"\nthrow new Error(\"boom\");"))
				want := []string{"out a 1\n", "out [INFO] i\n", "err [ERROR] e\n", "out [WARN] w\n", "out last\n"}
				if strings.Join(chunks, "|") != strings.Join(want, "|") {
					t.Errorf("chunks %q, want %q", chunks, want)
				}
				if res.GetSuccess() || res.GetError() != "boom" || res.GetState() != pb.ExecutionState_EXECUTION_STATE_FAILED {
					t.Errorf("result %v, want failed with error \"boom\"", res)
				}
			})
			t.Run("GetExecution result", func(t *testing.T) {
				ctx := callCtx(t)
				a, err := c.ExecuteAsync(ctx, codeReq("throw new TypeError(\"bad type\");"))
				if err != nil {
					t.Fatal(err)
				}
				st, err := c.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: true})
				if err != nil {
					t.Fatal(err)
				}
				if r := st.GetResult(); r.GetSuccess() || r.GetError() != "bad type" || r.GetState() != pb.ExecutionState_EXECUTION_STATE_FAILED {
					t.Fatalf("result %v, want failed with error \"bad type\"", r)
				}
			})
			t.Run("timeout", func(t *testing.T) {
				req := codeReq("console.log(\"spinning\");\nwhile (true) {}")
				req.TimeoutMs = ptr(int32(1000))
				resp, err := c.Execute(callCtx(t), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetSuccess() || resp.GetError() != "Script execution timed out" || resp.GetOutput() != "spinning" {
					t.Errorf("Execute: success %v error %q output %q; want the timeout's text", resp.GetSuccess(), resp.GetError(), resp.GetOutput())
				}
				_, res := stream(t, c, req)
				if res.GetError() != "Script execution timed out" || res.GetState() != pb.ExecutionState_EXECUTION_STATE_TIMEOUT {
					t.Errorf("ExecuteStream result %v, want TIMEOUT \"Script execution timed out\"", res)
				}
			})
			t.Run("cancel", func(t *testing.T) {
				ctx := callCtx(t)
				a, err := c.ExecuteAsync(ctx, codeReq("console.log(\"started\");\nwhile (true) { await new Promise(r => setTimeout(r, 10)); }"))
				if err != nil {
					t.Fatal(err)
				}
				waitOutput(t, c, a.GetExecutionId(), "started\n")
				cr, err := c.CancelExecution(ctx, &pb.CancelExecutionRequest{ExecutionId: a.GetExecutionId()})
				if err != nil || !cr.GetSuccess() || cr.GetState() != pb.ExecutionState_EXECUTION_STATE_CANCELLED {
					t.Fatalf("CancelExecution = %v, %v", cr, err)
				}
				st, err := c.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: true})
				if err != nil {
					t.Fatal(err)
				}
				if r := st.GetResult(); r.GetError() != "Execution was cancelled" || r.GetState() != pb.ExecutionState_EXECUTION_STATE_CANCELLED {
					t.Fatalf("result %v, want CANCELLED \"Execution was cancelled\"", r)
				}
			})
			t.Run("ExecuteTest output", func(t *testing.T) {
				resp, err := c.ExecuteTest(callCtx(t), &pb.ExecuteTestRequest{
					Code:  ptr("function add(a, b) { console.warn(\"adding\"); return a + b; }"),
					Tests: "test(\"adds\", () => { console.log(\"in test\"); assert.is(add(1, 2), 3); });",
				})
				if err != nil {
					t.Fatal(err)
				}
				if !resp.GetSuccess() || resp.GetOutput() != "in test\n[WARN] adding" || resp.GetSummary().GetPassed() != 1 {
					t.Fatalf("success %v output %q summary %v", resp.GetSuccess(), resp.GetOutput(), resp.GetSummary())
				}
			})
			t.Run("output caps", func(t *testing.T) {
				// ProDisco keeps 5000 lines and drops the rest silently;
				// the raw stdout keeps them all (within its own limit).
				resp, err := c.Execute(callCtx(t), codeReq("for (let i = 0; i < 6000; i++) console.log(i);"))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(resp.GetOutput(), "\n")
				if !resp.GetSuccess() || len(lines) != 5000 || lines[0] != "0" || lines[4999] != "4999" {
					t.Fatalf("success %v, %d lines (%q...%q), want the first 5000", resp.GetSuccess(), len(lines), lines[0], lines[len(lines)-1])
				}
			})
			// Where seed 000's error table and ProDisco's code disagree,
			// the table wins (docs/COMPATIBILITY.md).
			t.Run("seed error table", func(t *testing.T) {
				_, err := c.Execute(callCtx(t), codeReq("const x = ;"))
				if status.Code(err) != codes.InvalidArgument {
					t.Errorf("syntax error: %v, want INVALID_ARGUMENT", err)
				}
				_, err = c.Execute(callCtx(t), &pb.ExecuteRequest{Source: &pb.ExecuteRequest_Cached{Cached: "no-such-script"}})
				if status.Code(err) != codes.NotFound {
					t.Errorf("unknown cached script: %v, want NOT_FOUND", err)
				}
			})
		})
	}
}

// stream runs req with ExecuteStream and returns its output chunks, each
// as "out TEXT" or "err TEXT", and the result.
func stream(t *testing.T, c pb.SandboxServiceClient, req *pb.ExecuteRequest) ([]string, *pb.ExecuteResult) {
	t.Helper()
	st, err := c.ExecuteStream(callCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("stream ended without a result")
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x := ch.GetChunk().(type) {
		case *pb.ExecuteChunk_Output:
			chunks = append(chunks, "out "+x.Output)
		case *pb.ExecuteChunk_ErrorOutput:
			chunks = append(chunks, "err "+x.ErrorOutput)
		case *pb.ExecuteChunk_Result:
			return chunks, x.Result
		}
	}
}

// waitOutput polls the execution until its output holds want: the API
// has no "wait for output" call.
func waitOutput(t *testing.T, c pb.SandboxServiceClient, id, want string) {
	t.Helper()
	ctx := callCtx(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := c.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: id})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(st.GetOutput(), want) {
			return
		}
		if st.GetResult() != nil {
			t.Fatalf("execution ended before printing %q: %v", want, st.GetResult())
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no %q in the output: %v", want, ctx.Err())
		}
	}
}

func ptr[T any](v T) *T { return &v }
