//go:build linux

package integration

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/supervisor"
)

// TestProbesFollowTheForkServer: on the probe endpoint (what the
// kubelet's gRPC probes ask), a supervisor becomes ready once its fork
// server has started, is live all along, and at shutdown stops being
// ready while staying live, so that a draining pod is not restarted.
func TestProbesFollowTheForkServer(t *testing.T) {
	requireSandbox(t)
	in, err := startInstance("probes", sharedSlots, 2, 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = in.stop()
		}
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopProbes := in.srv.ServeProbes(lis)
	defer stopProbes()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx := callCtx(t)
	// Watch sends the state now and every change: no polling.
	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: supervisor.HealthReadiness})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("readiness watch: %v", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: supervisor.HealthLiveness}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness while ready: %v, %v", r.GetStatus(), err)
	}
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		supervisor.HealthReadiness: healthpb.HealthCheckResponse_NOT_SERVING,
		"":                         healthpb.HealthCheckResponse_NOT_SERVING,
		supervisor.HealthLiveness:  healthpb.HealthCheckResponse_SERVING,
	} {
		if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}); err != nil || r.GetStatus() != want {
			t.Errorf("after shutdown %q is %v (%v), want %v", svc, r.GetStatus(), err, want)
		}
	}
}
