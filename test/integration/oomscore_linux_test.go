package integration

import (
	"testing"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// manySmall starts 24 shells that each hold 4 MB of a string and wait:
// about 100 MB, past a 64 MiB sandbox, in processes each smaller than the
// worker (whose resident set counts ~12 MiB of its binary's pages).
const manySmall = `for i in $(seq 24); do (x=$(head -c 4000000 /dev/zero | tr '\0' a); sleep 2; echo ${#x} >/dev/null) & done; wait; echo done`

// TestOOMKillsTheProgramNotTheWorker: an exec of many small processes
// past its sandbox's memory limit loses some of them to the OOM killer,
// not the sandbox's worker (isolation/oomscore): the session sandbox
// lives on with its files, and the processes' adjustment says why.
func TestOOMKillsTheProgramNotTheWorker(t *testing.T) {
	si := startSessionInstance(t, "oom-order", 2)
	ctx := callCtx(t)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Limits: &sandboxv1.ResourceLimits{MaxMemoryBytes: 64 << 20}})
	if got := si.mustExec(t, "alice", id, "echo keep > /workspace/keep; cat /proc/self/oom_score_adj").stdout; got != "1000\n" {
		t.Errorf("a runtime process's oom_score_adj is %q, want 1000", got)
	}
	if _, err := si.exec(t, "alice", id, manySmall); err != nil {
		t.Fatalf("exec: %v", err)
	}
	sb, err := si.sessions["alice"].GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id})
	if err != nil || sb.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_READY {
		t.Fatalf("sandbox after the OOM kills: %v, %v; want READY", sb, err)
	}
	if got := si.mustExec(t, "alice", id, "cat /workspace/keep").stdout; got != "keep\n" {
		t.Fatalf("file reads %q after the OOM kills, want keep", got)
	}
}
