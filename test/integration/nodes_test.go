//go:build linux

package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// TestIDNamesItsNode runs two supervisors on this host as two nodes: an
// execution id, and a session sandbox id, from node-a sent to node-b is
// answered FAILED_PRECONDITION naming node-a, and sent to node-a's
// supervisor after it restarted, NOT_FOUND saying so. On Kubernetes the two are DaemonSet pods on two
// nodes, and a client that reached the wrong one learns where to go.
func TestIDNamesItsNode(t *testing.T) {
	requireSandbox(t)
	node := func(name string) func(*supervisor.Config) {
		return func(cfg *supervisor.Config) { cfg.NodeName = name }
	}
	start := func(name string, slot int, opts ...func(*supervisor.Config)) *instance {
		t.Helper()
		in, err := startInstance(name, slot, 2, 1, 5*time.Second, opts...)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		return in
	}
	a := start("node-a", sharedSlots, node("node-a"))
	aStopped := false
	t.Cleanup(func() {
		if !aStopped {
			_ = a.stop()
		}
	})
	b := start("node-b", sharedSlots+2, node("node-b"))
	t.Cleanup(func() { _ = b.stop() })
	ctx := callCtx(t)

	for in, want := range map[*instance]string{a: "node-a", b: "node-b"} {
		h, err := in.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
		if err != nil || h.GetNode() != want {
			t.Fatalf("HealthCheck: node %q, %v; want %q", h.GetNode(), err, want)
		}
	}
	resp := execute(t, a.client, shellReq("echo on a", 0))
	id := resp.GetOutcome().GetExecutionId()
	if !strings.HasPrefix(id, "node-a_") {
		t.Fatalf("execution id %q does not name node-a", id)
	}
	if got, err := a.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id}); err != nil || got.GetOutput() != "on a\n" {
		t.Fatalf("GetExecution on the owner: %v, %v", got, err)
	}

	// The wrong node: every call that takes an id names the owner.
	wantOwner := func(call string, err error, code codes.Code, words ...string) {
		t.Helper()
		st, _ := status.FromError(err)
		if st.Code() != code {
			t.Errorf("%s: %v, want %s", call, err, code)
			return
		}
		for _, w := range words {
			if !strings.Contains(st.Message(), w) {
				t.Errorf("%s: %q does not say %q", call, st.Message(), w)
			}
		}
	}
	_, err := b.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	wantOwner("GetExecution on node-b", err, codes.FailedPrecondition, `node "node-a"`, id)
	_, err = b.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id})
	wantOwner("CancelExecution on node-b", err, codes.FailedPrecondition, `node "node-a"`)

	// A session sandbox's id too.
	sessA, sessB := execfarmv1.NewSessionServiceClient(a.conn), execfarmv1.NewSessionServiceClient(b.conn)
	sb, err := sessA.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("CreateSandbox on node-a: %v", err)
	}
	sbID := sb.GetSandboxId()
	if !strings.HasPrefix(sbID, "node-a_") {
		t.Fatalf("sandbox id %q does not name node-a", sbID)
	}
	_, err = sessB.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: sbID})
	wantOwner("GetSandbox on node-b", err, codes.FailedPrecondition, `node "node-a"`, sbID)
	_, err = sessB.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: sbID})
	wantOwner("DeleteSandbox on node-b", err, codes.FailedPrecondition, `node "node-a"`)
	if got, err := sessA.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: sbID}); err != nil || got.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_READY {
		t.Fatalf("GetSandbox on the owner after node-b's refusals: %v, %v", got, err)
	}

	// node-a's supervisor restarts: what it held is gone, and it says so.
	if err := a.stop(); err != nil {
		t.Fatalf("stop node-a: %v", err)
	}
	aStopped = true
	a2 := start("node-a2", sharedSlots+4, node("node-a"))
	t.Cleanup(func() { _ = a2.stop() })
	_, err = a2.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	wantOwner("GetExecution after a restart", err, codes.NotFound, `node "node-a"`, "restarted")
	got, err := execfarmv1.NewSessionServiceClient(a2.conn).GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: sbID})
	if err != nil || got.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND || !strings.Contains(got.GetMessage(), "restarted") {
		t.Errorf("GetSandbox after a restart: %v, %v; want NOT_FOUND saying the supervisor restarted", got, err)
	}
	_, err = b.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "not-an-id"})
	wantOwner("GetExecution of a malformed id", err, codes.NotFound, "not an id")
}
