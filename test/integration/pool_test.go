//go:build linux

package integration

import (
	"strings"
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

// TestWarmPoolRunsGojaOnPreparedProcesses: goja programs on warm sandboxes
// (each holding a prepared goja process that has run its warm-up) print
// exactly their own output, keep their exit codes and uncaught errors, and
// see nothing of the warm-up.
func TestWarmPoolRunsGojaOnPreparedProcesses(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("poolgoja", poolSlot, 6, 1, 5*time.Second, func(cfg *supervisor.Config) { cfg.WarmPool = 2 })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	cases := []struct {
		code, out, errOut string
		exit              int32
	}{
		{`console.log("a"); setTimeout(() => console.log("b"), 1); await Promise.resolve(); console.log(typeof globalThis.warm, Object.keys(process.env).length)`, "a\nundefined 0\nb\n", "", 0},
		{`console.log("before"); process.exit(3)`, "before\n", "", 3},
		{`throw new Error("boom")`, "", "Uncaught Error: boom", 1},
	}
	for _, c := range cases {
		// Every run must find a warm sandbox: wait for the pool to refill.
		deadline := time.Now().Add(10 * time.Second)
		for {
			h, err := in.client.HealthCheck(callCtx(t), &sandboxv1.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if h.GetWarmPoolReady() == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool not refilled: %v", h)
			}
			time.Sleep(5 * time.Millisecond) // polling interval
		}
		resp, err := in.client.Execute(callCtx(t), gojaReq(c.code, 0))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetOutput() != c.out || !strings.Contains(resp.GetErrorOutput(), c.errOut) || resp.GetOutcome().GetExitCode() != c.exit {
			t.Errorf("%s:\n stdout %q stderr %q exit %d\n want %q, stderr with %q, exit %d", c.code,
				resp.GetOutput(), resp.GetErrorOutput(), resp.GetOutcome().GetExitCode(), c.out, c.errOut, c.exit)
		}
		if strings.Contains(resp.GetOutput()+resp.GetErrorOutput(), "warm") {
			t.Errorf("warm-up output leaked: %q", resp.GetOutput()+resp.GetErrorOutput())
		}
	}
	// Rlimits above the pool's: the prepared process's rlimits must not
	// cap a request that asks for more.
	for _, rt := range []sandboxv1.Runtime{sandboxv1.Runtime_RUNTIME_SHELL, sandboxv1.Runtime_RUNTIME_GOJA} {
		code := "ulimit -n"
		if rt == sandboxv1.Runtime_RUNTIME_GOJA {
			code = "console.log(2048)"
		}
		req := request(rt, code, 0)
		req.Limits = &sandboxv1.ResourceLimits{MaxFileDescriptors: 2048}
		resp, err := in.client.Execute(callCtx(t), req)
		if err != nil || !resp.GetSuccess() || strings.TrimSpace(resp.GetOutput()) != "2048" {
			t.Errorf("%v with 2048 open files on a pool of 1024: %v %v", rt, resp, err)
		}
	}
}
