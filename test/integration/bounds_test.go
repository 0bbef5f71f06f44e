//go:build linux

package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// TestResponsesArePaged: an execution keeping 3 MB on each stream is
// answered by Execute with the first MaxOutputBytesPerCall of each and
// output_partial set, and a ProDisco-style client that reads
// GetExecution by offsets until a terminal state gets every byte, in
// responses of at most MaxOutputBytesPerCall per stream.
func TestResponsesArePaged(t *testing.T) {
	in := requireSandbox(t)
	const n = 3_000_000
	req := shellReq("yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c 3000000; yes err | head -c 3000000 >&2", 60_000)
	req.Limits.MaxOutputBytes = 8 << 20
	resp := execute(t, in.client, req)
	o := resp.GetOutcome()
	if !resp.GetSuccess() || o.GetStdoutBytes() != n || o.GetStderrBytes() != n {
		t.Fatalf("%s", describe(resp))
	}
	if len(resp.GetOutput()) > supervisor.MaxOutputBytesPerCall || len(resp.GetErrorOutput()) > supervisor.MaxOutputBytesPerCall ||
		!resp.GetOutputPartial() || !resp.GetErrorOutputPartial() {
		t.Fatalf("Execute carried %d and %d bytes, partial %v %v; want at most %d each, partial", len(resp.GetOutput()), len(resp.GetErrorOutput()),
			resp.GetOutputPartial(), resp.GetErrorOutputPartial(), supervisor.MaxOutputBytesPerCall)
	}
	want := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n", n/63+1)[:n]
	if !strings.HasPrefix(want, resp.GetOutput()) {
		t.Fatal("Execute's output is not the head of the stream")
	}
	// ProDisco's polling loop (seeds: offset = outputLength; stop at a
	// terminal state).
	ctx := callCtx(t)
	var got strings.Builder
	var off int64
	calls := 0
	for {
		g, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: o.GetExecutionId(), OutputOffset: off})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if len(g.GetOutput()) > supervisor.MaxOutputBytesPerCall || len(g.GetErrorOutput()) > supervisor.MaxOutputBytesPerCall {
			t.Fatalf("GetExecution carried %d and %d bytes", len(g.GetOutput()), len(g.GetErrorOutput()))
		}
		if g.GetOutput() != "" {
			got.WriteString(g.GetOutput())
			off = g.GetOutputLength()
		}
		if g.GetErrorOutputLength() > supervisor.MaxOutputBytesPerCall {
			t.Fatalf("error_output_length %d from offset 0: a page longer than the maximum", g.GetErrorOutputLength())
		}
		if g.GetState() >= sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
			if g.GetResult() == nil {
				t.Fatal("a terminal state without the result")
			}
			break
		}
		if calls > 10 {
			t.Fatalf("still paging after %d calls", calls)
		}
	}
	if got.String() != want || calls < 3 {
		t.Fatalf("paged %d bytes in %d calls; want all %d, in at least 3", got.Len(), calls, n)
	}
}

// TestQueuedRequestsHaveAByteBudget: requests of a few MiB each queue up
// behind a running execution only until the bytes they hold reach the
// budget (execution.DefaultMaxJobBytes); the next is RESOURCE_EXHAUSTED,
// and once they are gone a request is admitted again.
func TestQueuedRequestsHaveAByteBudget(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("jobbytes", queueSlot, 4, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := callCtx(t)
	blocker, err := in.client.ExecuteAsync(ctx, shellReq("sleep 30", 60_000))
	if err != nil {
		t.Fatal(err)
	}
	big := gojaReq("// "+strings.Repeat("x", 3<<20)+"\nconsole.log(1)", 0)
	var ids []string
	var refused error
	for i := range 40 {
		r, err := in.client.ExecuteAsync(ctx, big)
		if err != nil {
			refused = err
			break
		}
		ids = append(ids, r.GetExecutionId())
		if i == 39 {
			t.Fatalf("40 requests of 3 MiB queued: no byte budget")
		}
	}
	// Each holds 3 MiB of code (the comment is no program): 64 MiB holds
	// about 20.
	if status.Code(refused) != codes.ResourceExhausted || len(ids) < 15 || len(ids) > 22 {
		t.Fatalf("after %d queued: %v; want RESOURCE_EXHAUSTED after about 20 (64 MiB)", len(ids), refused)
	}
	for _, id := range append(ids, blocker.GetExecutionId()) {
		if _, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if r := execute(t, in.client, big); !r.GetSuccess() {
		t.Fatalf("after the queue emptied: %s", describe(r))
	}
}

// rawCodec sends a request given as its wire bytes ([]byte) and decodes
// the answer into a proto message: a client that sends what grpc-go's own
// marshalling would refuse (invalid UTF-8 in a string).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	return proto.Unmarshal(b, v.(proto.Message))
}
func (rawCodec) Name() string { return "proto" }

// TestRequestsRefusedBeforeASandbox: requests the sandbox could never run
// are refused up front with INVALID_ARGUMENT naming the field, not
// INTERNAL after a sandbox was started: invalid UTF-8 in code (grpc-go
// refuses it while decoding), shell code past the kernel's 128 KiB
// argument limit (up to 3 MiB), and a file-descriptor limit above what
// the supervisor itself may grant.
func TestRequestsRefusedBeforeASandbox(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	conn, err := in.tc.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// ExecuteRequest{code = "echo \xff"; runtime = SHELL}.
	var raw []byte
	raw = protowire.AppendTag(raw, 1, protowire.BytesType)
	raw = protowire.AppendString(raw, "echo \xff\xfe")
	raw = protowire.AppendTag(raw, 100, protowire.VarintType)
	raw = protowire.AppendVarint(raw, uint64(sandboxv1.Runtime_RUNTIME_SHELL))
	var resp sandboxv1.ExecuteResponse
	err = conn.Invoke(ctx, "/prodisco.sandbox.v1.SandboxService/Execute", raw, &resp, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "code") {
		t.Errorf("invalid UTF-8 in code: %v, want INVALID_ARGUMENT naming code", err)
	}
	for _, n := range []int{200 << 10, 3 << 20} {
		_, err := in.client.Execute(ctx, shellReq(": "+strings.Repeat("x", n), 0))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "MAX_ARG_STRLEN") {
			t.Errorf("%d bytes of shell code: %v, want INVALID_ARGUMENT naming the limit", n, err)
		}
	}
	// Code that becomes a command-line argument cannot hold a NUL byte:
	// it ended FAILED internal, "start /bin/sh: invalid argument".
	for _, rt := range []sandboxv1.Runtime{sandboxv1.Runtime_RUNTIME_SHELL, sandboxv1.Runtime_RUNTIME_PYTHON} {
		req := shellReq("echo a\x00b", 0)
		req.Runtime = rt
		_, err := in.client.Execute(ctx, req)
		if status.Code(err) != codes.InvalidArgument || badField(err) != "code" || !strings.Contains(status.Convert(err).Message(), "NUL byte") {
			t.Errorf("%s code with a NUL byte: %v, want INVALID_ARGUMENT naming code", rt, err)
		}
	}
	if r := execute(t, in.client, shellReq(": "+strings.Repeat("x", 100<<10)+"; echo fits", 0)); r.GetOutput() != "fits\n" {
		t.Errorf("100 KiB of shell code: %s", describe(r))
	}
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	if nofile.Max < 65536 {
		req := shellReq("ulimit -n", 30_000)
		req.Limits.MaxFileDescriptors = int32(nofile.Max) + 1
		_, err := in.client.Execute(ctx, req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "max_file_descriptors") {
			t.Errorf("max_file_descriptors %d, above the supervisor's hard RLIMIT_NOFILE %d: %v, want INVALID_ARGUMENT", nofile.Max+1, nofile.Max, err)
		}
		req.Limits.MaxFileDescriptors = int32(nofile.Max)
		if r := execute(t, in.client, req); r.GetOutput() != fmt.Sprintf("%d\n", nofile.Max) {
			t.Errorf("max_file_descriptors %d: %s", nofile.Max, describe(r))
		}
	}
}

// badField returns the field an INVALID_ARGUMENT error names in its
// google.rpc.BadRequest detail, "" when it names none.
func badField(err error) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}

// forkServerPid returns the pid of this process's fork server (a child
// whose command line starts with execfarm-fork).
func forkServerPid(t *testing.T) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasPrefix(string(cmd), "execfarm-fork\x00") {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	t.Fatal("no fork server among this process's children")
	return 0
}

// TestStoppedForkServer: with the fork server stopped (SIGSTOP), an
// execution's 1000 ms timeout still holds (sandbox start-up counts) and it
// ends TIMEOUT, not INTERNAL after ten seconds; HealthCheck and
// grpc.health.v1 say the supervisor cannot serve until the fork server
// runs again.
func TestStoppedForkServer(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	execute(t, in.client, shellReq("true", 0)) // the fork server runs
	pid := forkServerPid(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	start := time.Now()
	r := execute(t, in.client, shellReq("echo never", 1000))
	if took := time.Since(start); r.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT || took > 5*time.Second {
		t.Errorf("with the fork server stopped, a 1000 ms execution ended %s after %v: %s", r.GetState(), took, describe(r))
	}
	if h, err := in.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}); err != nil || h.GetHealthy() || h.GetUnhealthyReason() != supervisor.ReasonForkServer {
		t.Errorf("HealthCheck with the fork server stopped: healthy %v, reason %q, %v; want not healthy, %q", h.GetHealthy(), h.GetUnhealthyReason(), err, supervisor.ReasonForkServer)
	}
	waitHealth := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		hc := healthpb.NewHealthClient(in.conn)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(10 * time.Second)
		for {
			got, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			if err == nil && got.GetStatus() == want {
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("grpc.health.v1: %v %v, want %v", got.GetStatus(), err, want)
			}
		}
	}
	waitHealth(healthpb.HealthCheckResponse_NOT_SERVING)
	resume()
	waitHealth(healthpb.HealthCheckResponse_SERVING)
	if r := execute(t, in.client, shellReq("echo again", 0)); r.GetOutput() != "again\n" {
		t.Fatalf("after the fork server resumed: %s", describe(r))
	}
}
