package supervisor

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/isolation"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Services of grpc.health.v1 that probes ask (Kubernetes' liveness,
// readiness and startup probes, through ServeProbes). The HTTP probes
// /healthz and /readyz, when they come, answer with the same two states.
const (
	// HealthLiveness is SERVING from New until the process exits: the
	// supervisor answers. A supervisor that cannot answer is wedged, and
	// a liveness probe restarts it. It stays SERVING during a graceful
	// shutdown, so that a pod draining its executions is not killed for
	// it.
	HealthLiveness = "liveness"
	// HealthReadiness is SERVING once the supervisor can start sandboxes,
	// that is once its fork server has started, and until Shutdown
	// begins. The whole server ("") and its services
	// (prodisco.sandbox.v1.SandboxService, execfarm.v1.SessionService)
	// report the same.
	HealthReadiness = "readiness"
)

// readinessServices are the grpc.health.v1 names that follow readiness.
var readinessServices = []string{"", HealthReadiness, sandboxv1.SandboxService_ServiceDesc.ServiceName, execfarmv1.SessionService_ServiceDesc.ServiceName}

// Retries of the fork server's first start: from the first to the
// largest wait between two tries.
const (
	readyRetryFirst = 100 * time.Millisecond
	readyRetryMax   = 30 * time.Second
)

// probeState is the supervisor's liveness and readiness.
type probeState struct {
	mu      sync.Mutex
	ready   bool
	closing bool
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// startHealth reports the supervisor live and, in a goroutine, starts the
// fork server and reports it ready when it has; until then, and when it
// cannot start (retried with a growing wait up to readyRetryMax, each
// failure logged), it is not ready. stopHealth ends the goroutine.
func (s *Server) startHealth() {
	s.health.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
	ctx, cancel := context.WithCancel(context.Background())
	s.probes.cancel = cancel
	s.probes.done.Add(1)
	go func() {
		defer s.probes.done.Done()
		wait := readyRetryFirst
		for {
			err := sandbox.StartForkServer(&s.cfg.Sandbox)
			if err == nil {
				s.setReadiness(healthpb.HealthCheckResponse_SERVING)
				return
			}
			if errors.Is(err, isolation.ErrNotSupported) {
				s.log.Error("not ready: this platform cannot start sandboxes", "error", err)
				return
			}
			s.log.Error("not ready: the fork server did not start", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, readyRetryMax)
		}
	}()
}

// ready reports whether the supervisor is ready (HealthReadiness).
func (s *Server) ready() bool {
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	return s.probes.ready && !s.probes.closing
}

// setReadiness sets every readiness service to st, unless the supervisor
// is shutting down (then it stays NOT_SERVING).
func (s *Server) setReadiness(st healthpb.HealthCheckResponse_ServingStatus) {
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	if s.probes.closing {
		return
	}
	s.probes.ready = st == healthpb.HealthCheckResponse_SERVING
	for _, name := range readinessServices {
		s.health.SetServingStatus(name, st)
	}
}

// stopHealth reports the supervisor not ready (for good; it stays live)
// and waits for startHealth's goroutine to end.
func (s *Server) stopHealth() {
	s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
	s.probes.mu.Lock()
	s.probes.closing = true
	s.probes.mu.Unlock()
	if s.probes.cancel != nil {
		s.probes.cancel()
	}
	s.probes.done.Wait()
}

// Bounds of the probe endpoint (ServeProbes), which anyone who reaches
// its address may call without credentials: a kubelet needs one
// connection and one call at a time.
const (
	probeMaxConnections = 8
	probeMaxStreams     = 4
)

// ServeProbes serves grpc.health.v1 alone, in plaintext, on lis, for the
// kubelet's gRPC probes, which speak neither TLS nor tokens. It answers
// with the same states as the health service of the main endpoint
// (HealthLiveness, HealthReadiness), serves nothing else, and holds at
// most probeMaxConnections connections. It returns at once; stop ends it
// and closes lis.
func (s *Server) ServeProbes(lis net.Listener) (stop func()) {
	g := grpc.NewServer(grpc.MaxConcurrentStreams(probeMaxStreams), grpc.ConnectionTimeout(5*time.Second))
	healthpb.RegisterHealthServer(g, s.health)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(netutil.LimitListener(lis, probeMaxConnections))
	}()
	return func() {
		g.Stop()
		<-done
	}
}
