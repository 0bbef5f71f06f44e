package supervisor

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// TestProbes: over the probe endpoint (plaintext, grpc.health.v1 alone) a
// supervisor whose fork server cannot start is live but not ready; after
// Shutdown it is still live and never ready; nothing but health is
// served there; and nothing is left running.
func TestProbes(t *testing.T) {
	s, err := New(Config{Sandbox: validSandboxConfig(t)}) // its worker binary is no program
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := s.ServeProbes(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(conn)
	want := func(when string, states map[string]healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		for svc, st := range states {
			r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			if err != nil || r.GetStatus() != st {
				t.Errorf("%s: %q is %v (%v), want %v", when, svc, r.GetStatus(), err, st)
			}
		}
	}
	notReady := map[string]healthpb.HealthCheckResponse_ServingStatus{
		HealthLiveness: healthpb.HealthCheckResponse_SERVING, HealthReadiness: healthpb.HealthCheckResponse_NOT_SERVING,
		"": healthpb.HealthCheckResponse_NOT_SERVING, sandboxv1.SandboxService_ServiceDesc.ServiceName: healthpb.HealthCheckResponse_NOT_SERVING,
	}
	want("fork server failing", notReady)
	if _, err := sandboxv1.NewSandboxServiceClient(conn).HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("the probe endpoint served the sandbox service: %v", err)
	}
	_ = s.Shutdown(0)
	s.setReadiness(healthpb.HealthCheckResponse_SERVING) // a late fork-server start
	want("after Shutdown", notReady)
	conn.Close()
	stop()
	goleak.VerifyNone(t, processGoroutines()...)
}

// processGoroutines are goleak options ignoring the goroutines that live
// as long as the process once a sandbox or the fork server was started.
func processGoroutines() []goleak.Option {
	var ignore []goleak.Option
	for _, f := range sandbox.ProcessGoroutines {
		ignore = append(ignore, goleak.IgnoreTopFunction(f))
	}
	return ignore
}
