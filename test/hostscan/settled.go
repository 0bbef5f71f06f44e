package hostscan

import (
	"context"
	"fmt"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Settled polls c's HealthCheck until the supervisor holds no scheduler
// slot and queues nothing (running and queued 0): a result is published
// as soon as nothing of its execution can run, and the rest of the
// sandbox's teardown (its worker, cgroup, host directory, uid range)
// follows with the slot still held, so only then is a terminal
// execution's sandbox gone. Errors: ctx's, with the last counts seen.
// (Here rather than in testbin: the ProDisco client test links testbin
// with ProDisco's own copy of the proto, which must not meet sandboxv1.)
func Settled(ctx context.Context, c sandboxv1.SandboxServiceClient) error {
	tick := time.NewTicker(2 * time.Millisecond) // polling interval
	defer tick.Stop()
	for {
		h, err := c.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
		if err != nil {
			return fmt.Errorf("wait for the supervisor to settle: %w", err)
		}
		if h.GetRunning() == 0 && h.GetQueued() == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("wait for the supervisor to settle: %d running, %d queued: %w", h.GetRunning(), h.GetQueued(), ctx.Err())
		}
	}
}
