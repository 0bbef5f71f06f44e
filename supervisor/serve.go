package supervisor

import (
	"context"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/supervisor/transport"
)

// ListenAndServe serves s on the transport tc until ctx is done, then
// shuts down gracefully: new calls are refused, running executions get up
// to grace to finish, then everything left is killed.
func ListenAndServe(ctx context.Context, s *Server, tc transport.Config, grace time.Duration, ready func(addr string)) error {
	lis, err := tc.Listen()
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
	// Metrics first: their interceptors then count the calls a token
	// check refuses.
	g := grpc.NewServer(append(s.cfg.Metrics.ServerOptions(), sec.Options...)...)
	s.Register(g)
	s.cfg.Metrics.InitializeGRPC(g)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(lis) }()
	if ready != nil {
		ready(tc.Address())
	}
	select {
	case err := <-errc:
		_ = s.Shutdown(0)
		return err
	case <-ctx.Done():
	}
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
