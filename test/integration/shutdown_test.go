//go:build linux

package integration

import (
	"github.com/execfarm/execfarm/test/hostscan"

	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/test/testbin"
)

// TestGracefulShutdown shuts a supervisor down with an execution running:
// one that ends within the grace period completes; one that runs past it
// is killed, with nothing of its sandbox left.
func TestGracefulShutdown(t *testing.T) {
	requireSandbox(t)
	tests := []struct {
		name      string
		grace     time.Duration
		code      string
		wantState registry.State
		wantOut   string
		wantErr   bool // ListenAndServe reports that executions were killed
	}{
		{
			name: "finishes within grace", grace: 5 * time.Second,
			code:      "echo started; sleep 0.5; echo done",
			wantState: registry.StateCompleted, wantOut: "started\ndone\n",
		},
		{
			name: "killed after grace", grace: 500 * time.Millisecond,
			code:      fmt.Sprintf("echo started; sleep %s3 & sleep %s3; wait", sleepMarker, sleepMarker),
			wantState: registry.StateCancelled, wantOut: "started\n", wantErr: true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := startInstance(fmt.Sprintf("shutdown-%d", i), sharedSlots+i*4, 4, 2, tt.grace)
			if err != nil {
				t.Fatalf("start supervisor: %v", err)
			}
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					_ = in.stop()
				}
			})
			ctx := callCtx(t)
			async, err := in.client.ExecuteAsync(ctx, shellReq(tt.code, 0))
			if err != nil {
				t.Fatalf("ExecuteAsync: %v", err)
			}
			if r := waitOutput(ctx, t, in.client, async.GetExecutionId(), "started"); r.GetResult() != nil {
				t.Fatalf("ended before the shutdown: %v", r)
			}
			begin := time.Now()
			err = in.stop()
			stopped = true
			took := time.Since(begin)
			if (err != nil) != tt.wantErr {
				t.Fatalf("shutdown returned %v; want an error: %v", err, tt.wantErr)
			}
			if took > tt.grace+testbin.Scaled(5*time.Second) {
				t.Fatalf("shutdown took %v with a grace of %v", took, tt.grace)
			}
			if tt.wantErr && took < tt.grace {
				t.Fatalf("shutdown killed after %v, before the grace of %v was over", took, tt.grace)
			}
			e, err := in.srv.Registry().Get(async.GetExecutionId())
			if err != nil {
				t.Fatalf("registry: %v", err)
			}
			res, terminal := e.Result()
			out, _, _, _ := e.Read(registry.Stdout, 0)
			if !terminal || res.State != tt.wantState || string(out) != tt.wantOut {
				t.Fatalf("after shutdown: terminal %v, state %s (%s: %s), output %q; want %s, %q",
					terminal, res.State, res.Reason, res.Error, out, tt.wantState, tt.wantOut)
			}
			if ps := hostscan.WithMarker("sleep " + sleepMarker + "3"); len(ps) > 0 {
				t.Fatalf("processes left after shutdown: %v", ps)
			}
			if l := leftovers(in); len(l) > 0 {
				t.Fatalf("sandbox leftovers after shutdown:\n%s", strings.Join(l, "\n"))
			}
			// The server is gone: a new call cannot reach it.
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			c := in.dial(t)
			if _, err := c.HealthCheck(cctx, &sandboxv1.HealthCheckRequest{}); err == nil {
				t.Fatalf("HealthCheck succeeded after shutdown")
			}
		})
	}
}
