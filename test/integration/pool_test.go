//go:build linux

package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// poolSlot is the uid window slot of the warm-pool supervisor: 2 running +
// 4 warm sandboxes.
const poolSlot = 34

// TestWarmPoolNeverSharesASandbox: 64 concurrent clients against a pool of
// 4 (2 slots running); every execution reports its sandbox, and no sandbox
// serves two executions. HealthCheck shows the pool.
func TestWarmPoolNeverSharesASandbox(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("pool", poolSlot, 6, 2, 5*time.Second, func(cfg *supervisor.Config) { cfg.WarmPool = 4 })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for c := 0; c < 64; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2; i++ {
				resp, err := in.client.Execute(callCtx(t), shellReq("echo ok", 0))
				if err != nil || !resp.GetSuccess() {
					t.Errorf("client %d: %v %v", c, err, resp)
					return
				}
				id := resp.GetOutcome().GetSandboxId()
				mu.Lock()
				if prev, dup := seen[id]; dup || id == "" {
					t.Errorf("sandbox %q served %s and %s", id, prev, resp.GetOutcome().GetExecutionId())
				}
				seen[id] = resp.GetOutcome().GetExecutionId()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 128 {
		t.Fatalf("%d distinct sandboxes for 128 executions", len(seen))
	}
	h, err := in.client.HealthCheck(callCtx(t), &sandboxv1.HealthCheckRequest{})
	if err != nil || h.GetWarmPoolSize() != 4 {
		t.Fatalf("HealthCheck pool = %v, %v", h, err)
	}
}
