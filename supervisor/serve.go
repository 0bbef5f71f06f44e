package supervisor

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// ListenAndServe serves s on the transport tc until ctx is done, then
// shuts down gracefully: new calls are refused, running executions get up
// to grace to finish, then everything left is killed.
func ListenAndServe(ctx context.Context, s *Server, tc transport.Config, grace time.Duration, ready func(addr string)) error {
	// Bounded connections and streams, a reserve for authenticated
	// callers, accept errors waited out (transport.Config.ListenServer);
	// its options come before the token check's, which marks a
	// connection authenticated.
	lis, opts, err := tc.ListenServer()
	if err != nil {
		return err
	}
	sec, err := tc.ServerSecurity()
	if err != nil {
		lis.Close()
		return err
	}
	// After the gRPC server has stopped: no handshake needs it then.
	defer sec.Close()
	defer s.cfg.Metrics.RegisterCertificate(sec.CertificateNotAfter)()
	// Invalid UTF-8 is refused after the token check (refuseInvalidUTF8).
	g := s.grpcServer(append(append(opts, sec.Options...), refuseInvalidUTF8()...)...)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(lis) }()
	healthCtx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() { s.watchHealth(healthCtx); close(healthDone) }()
	defer func() { stopHealth(); <-healthDone }()
	if ready != nil {
		ready(tc.Address())
	}
	select {
	case err := <-errc:
		_ = s.Shutdown(0)
		return err
	case <-ctx.Done():
	}
	running, queued := s.sched.Counts()
	s.log.Info("shutting down", "grace", grace.String(), "running", running, "queued", queued)
	shutdownErr := s.Shutdown(grace)
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		g.Stop()
	}
	if !tc.UseTCP {
		_ = os.Remove(tc.Address()[len("unix://"):])
	}
	return shutdownErr
}

// grpcServer returns a gRPC server with s's services registered
// (Register), the keepalive policy (KeepaliveTime...), transport's options
// (token check, bounds) and, around
// them, the metrics' interceptors outermost (so they count the calls a
// token check refuses, and panics as INTERNAL) and panic recovery
// innermost, next to the handlers: a panic in a handler is logged with
// its stack and answered INTERNAL, and the server goes on serving.
func (s *Server) grpcServer(transport ...grpc.ServerOption) *grpc.Server {
	opts := append(s.cfg.Metrics.ServerOptions(), keepaliveOptions(KeepaliveMinTime, KeepaliveTime, KeepaliveTimeout)...)
	opts = append(opts, transport...)
	opts = append(opts,
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(s.recoverHandler))),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(s.recoverHandler))))
	g := grpc.NewServer(opts...)
	s.Register(g)
	s.cfg.Metrics.InitializeGRPC(g)
	return g
}

// Keepalive (HTTP/2 PINGs), the same on every connection:
//   - the server pings a connection that has been idle for KeepaliveTime
//     and closes it when no answer comes within KeepaliveTimeout, so that
//     a client whose host vanished holds no connection or stream past
//     that;
//   - a client may ping every KeepaliveMinTime, with calls in flight or
//     none (ProDisco's and grpc-go's clients hold a connection open
//     between calls); pinging more often earns a strike, and after gRPC's
//     second strike the connection is closed with GOAWAY
//     ENHANCE_YOUR_CALM "too_many_pings".
//
// 10 s is the shortest keepalive time grpc-go and grpc-js clients
// accept, so no client is closed for the keepalive it may configure.
const (
	KeepaliveTime    = time.Minute
	KeepaliveTimeout = 20 * time.Second
	KeepaliveMinTime = 10 * time.Second
)

// keepaliveOptions are the server options of that policy with the given
// times (tests shorten them).
func keepaliveOptions(minTime, idle, timeout time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: idle, Timeout: timeout}),
	}
}

// recoverHandler turns a panic p in the handler of ctx's call into an
// INTERNAL status (rpcError of a *handlerPanic) and logs it with the
// stack.
func (s *Server) recoverHandler(ctx context.Context, p any) error {
	method, _ := grpc.Method(ctx)
	s.log.Error("gRPC handler panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return rpcError(&handlerPanic{method: method, value: p})
}

// watchHealth keeps grpc.health.v1 in step with the fork server, checked
// every second (sandbox.ForkServerCheck), so that a Watch learns of it
// without a probe asking: every readiness service (HealthReadiness)
// NOT_SERVING as soon as it cannot start sandboxes (stopped); once it can
// again, readiness is what every check says (Readiness, asked every
// second until it is ready). It returns when ctx ends.
func (s *Server) watchHealth(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	serving := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok := sandbox.ForkServerCheck() == nil
		if ok == serving || s.runner.Closing() {
			continue
		}
		serving = ok
		if !ok {
			s.log.Error("sandboxes cannot start: the fork server cannot serve; not ready", "error", sandbox.ForkServerCheck())
			s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
			continue
		}
		// Every check again, not the fork server's alone; until they all
		// pass (or while Readiness answers from a run of before the
		// fork server recovered) they are asked again at every tick.
		if s.Readiness() != "" {
			serving = false
		}
	}
}
