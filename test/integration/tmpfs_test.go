//go:build linux

package integration

import (
	"strings"
	"testing"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// fillScratch writes a file to keep, then 4 MiB files into /workspace,
// /tmp and /dev/shm until a write fails, and says which were filled: at
// most 64 files each (256 MiB), so a mount without a bound fails the test
// rather than the host.
const fillScratch = `echo keep > /workspace/first
for d in /workspace /tmp /dev/shm; do
  i=0
  while dd if=/dev/zero of=$d/fill.$i bs=1M count=4 status=none; do
    i=$((i + 1))
    [ $i -lt 64 ] || { echo "$d took 256 MiB"; exit 1; }
  done
  echo "full $d after $i files"
done
`

// checkFilled fails t unless stdout and stderr say each mount was filled
// until a write failed with ENOSPC or EFBIG.
func checkFilled(t *testing.T, stdout, stderr string) {
	t.Helper()
	for _, d := range []string{"/workspace", "/tmp", "/dev/shm"} {
		if !strings.Contains(stdout, "full "+d+" after") {
			t.Errorf("%s not filled: stdout %q stderr %q", d, stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "No space left on device") && !strings.Contains(stderr, "File too large") {
		t.Errorf("no write failed with ENOSPC or EFBIG: stderr %q", stderr)
	}
}

// TestSessionFilesCannotFillMemory: a session sandbox of 64 MiB whose
// /workspace, /tmp and /dev/shm are filled until writes fail keeps its
// worker: its files alone cannot reach the memory limit (limits: the three
// mounts fit the limit less a reserve), so the filling exec completes,
// the sandbox stays ready, a new exec runs and the first file is still
// there. Before the mounts were fitted, the files filled the limit and
// the OOM killer's only candidate, the worker, ended the sandbox.
func TestSessionFilesCannotFillMemory(t *testing.T) {
	si := startSessionInstance(t, "sess-fill", 2)
	ctx := callCtx(t)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Limits: &sandboxv1.ResourceLimits{MaxMemoryBytes: 64 << 20}})
	r, err := si.exec(t, "alice", id, fillScratch)
	if err != nil || !r.result.GetSuccess() {
		t.Fatalf("filling exec: %v, %v; stdout %q stderr %q", r.result, err, r.stdout, r.stderr)
	}
	checkFilled(t, r.stdout, r.stderr)
	sb, err := si.sessions["alice"].GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: id})
	if err != nil || sb.GetState() != execfarmv1.SandboxState_SANDBOX_STATE_READY {
		t.Fatalf("sandbox after filling: %v, %v; want READY", sb, err)
	}
	if got := si.mustExec(t, "alice", id, "cat /workspace/first").stdout; got != "keep\n" {
		t.Fatalf("first file reads %q, want keep", got)
	}
}

// TestFilesCannotFillMemory: a single-use execution of 64 MiB that fills
// its mounts gets ENOSPC and completes, not an OOM kill it did not cause
// with its own memory.
func TestFilesCannotFillMemory(t *testing.T) {
	in := requireSandbox(t)
	req := shellReq(fillScratch, 0)
	req.Limits = &sandboxv1.ResourceLimits{MaxMemoryBytes: 64 << 20}
	resp := execute(t, in.client, req)
	if !resp.GetSuccess() || resp.GetOutcome().GetUsage().GetOomKills() != 0 {
		t.Fatalf("filling execution: %s", describe(resp))
	}
	checkFilled(t, resp.GetOutput(), resp.GetErrorOutput())
}
