package mcpbridge

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/execfarm/execfarm/internal/probe"
	"github.com/hashicorp/go-hclog"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Probe paths of `execfarm mcp --http` (agent-sandbox's MCP server's):
// GET /healthz is liveness (the process serves HTTP; it asks nothing of
// the supervisor, so a supervisor's blip does not restart every bridge),
// GET /readyz is readiness (the supervisor answers its readiness health
// check). Both take no token, as a kubelet's probes carry none.
const (
	LivenessPath  = "/healthz"
	ReadinessPath = "/readyz"
)

// The reasons /readyz gives, generic on purpose (the endpoint takes no
// credentials; the details go to the log).
const (
	// ReasonSupervisorUnavailable: the supervisor did not answer its
	// health check.
	ReasonSupervisorUnavailable = "supervisor unavailable"
	// ReasonSupervisorNotReady: it answered, not ready (starting, its
	// fork server gone, shutting down: its own /readyz says which).
	ReasonSupervisorNotReady = "supervisor not ready"
)

// supervisorReadiness is the grpc.health.v1 service the supervisor's
// readiness follows (supervisor.HealthReadiness).
const supervisorReadiness = "readiness"

// Bounds of the readiness check, which anyone who reaches the address
// can trigger: one check at a time, at most one per readyEvery (callers
// in between get the last result), each within readyTimeout.
const (
	readyEvery   = time.Second
	readyTimeout = 3 * time.Second
)

// readiness runs and caches the supervisor's health check.
type readiness struct {
	health healthpb.HealthClient
	log    hclog.Logger

	mu        sync.Mutex // serialises checks and guards what follows
	checkedAt time.Time
	reason    string // "" = ready
}

func (r *readiness) check(ctx context.Context) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checkedAt.IsZero() && time.Since(r.checkedAt) < readyEvery {
		return r.reason
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	resp, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{Service: supervisorReadiness})
	reason := ""
	switch {
	case err != nil:
		reason = ReasonSupervisorUnavailable
		if r.log != nil && r.reason != reason {
			r.log.Warn("not ready: the supervisor's health check failed", "error", err)
		}
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		reason = ReasonSupervisorNotReady
		if r.log != nil && r.reason != reason {
			r.log.Warn("not ready: the supervisor is not ready", "status", resp.GetStatus().String())
		}
	}
	r.checkedAt, r.reason = time.Now(), reason
	return reason
}

// withProbes serves the probes at their paths, before authentication,
// and everything else with next. health nil: the probes are not served.
func withProbes(next http.Handler, health healthpb.HealthClient, log hclog.Logger) http.Handler {
	if health == nil {
		return next
	}
	r := &readiness{health: health, log: log}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case LivenessPath, ReadinessPath:
		default:
			next.ServeHTTP(w, req)
			return
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if req.URL.Path == LivenessPath {
			probe.Write(w, http.StatusOK, map[string]any{"live": true})
			return
		}
		if reason := r.check(req.Context()); reason != "" {
			probe.Write(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": reason})
			return
		}
		probe.Write(w, http.StatusOK, map[string]any{"ready": true})
	})
}
