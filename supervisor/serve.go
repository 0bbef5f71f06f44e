package supervisor

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// ErrHostCannotIsolate is returned when a required isolation layer is
// missing and the operator did not allow running without it. It is
// probe.ErrHostCannotIsolate, so errors.Is works with either.
var ErrHostCannotIsolate = probe.ErrHostCannotIsolate

// CheckHost is CheckHostConfig for the cgroup cg and the default uid window
// (DefaultUIDBase, probe.DefaultUIDSlots ranges of 65536 ids). Callers
// whose sandboxes use another window call CheckHostConfig with it.
func CheckHost(cg cgroup.Config, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	return CheckHostConfig(probe.Config{Cgroup: cg}, allowDegraded)
}

// CheckHostConfig runs the host probe (probe.Run: namespaces tried by
// forking, cgroup version and controllers, seccomp, landlock ABI, overlay,
// the uid window) and applies the operator's allowDegraded. It returns
// every layer for HealthCheck and, when the supervisor must not start, an
// error: one wrapping ErrHostCannotIsolate that names every missing
// required layer not allowed (a *probe.MissingError), or one wrapping
// probe.ErrUnknownLayer or probe.ErrNotDegradable for an allowDegraded
// name that is unknown or cannot be degraded (only "seccomp" can). A layer
// allowed to be degraded is reported inactive, its detail starting
// "disabled by --allow-degraded"; the caller must switch it off (seccomp:
// sandbox.Config.NoSeccomp) and log it. grpc.health.v1 stays SERVING on a
// degraded supervisor: it serves, and HealthCheck says with which layers.
func CheckHostConfig(pc probe.Config, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	return hostLayers(probe.Run(pc), allowDegraded)
}

// hostLayers converts a probe report to HealthCheck's layers and the
// start-up verdict.
func hostLayers(r probe.Report, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	resolved, err := r.Resolve(allowDegraded)
	layers := make([]*sandboxv1.IsolationLayer, 0, len(resolved))
	for _, l := range resolved {
		detail := l.Detail
		switch l.Status {
		case probe.StatusDegradedAllowed:
			detail = "disabled by --allow-degraded; " + detail
		case probe.StatusMissing:
			detail = "missing: " + detail
		}
		layers = append(layers, &sandboxv1.IsolationLayer{Name: l.Name, Available: l.Available, Active: l.Active, Detail: detail})
	}
	if err != nil {
		return layers, fmt.Errorf("supervisor: check host: %w", err)
	}
	return layers, nil
}

// ListenAndServe serves s on the transport tc until ctx is done, then
// shuts down gracefully: new calls are refused, running executions get up
// to grace to finish, then everything left is killed.
func ListenAndServe(ctx context.Context, s *Server, tc transport.Config, grace time.Duration, ready func(addr string)) error {
	lis, err := tc.Listen()
	if err != nil {
		return err
	}
	opts, err := tc.ServerOptions()
	if err != nil {
		lis.Close()
		return err
	}
	// Metrics first: their interceptors then count the calls a token
	// check refuses.
	g := grpc.NewServer(append(s.cfg.Metrics.ServerOptions(), opts...)...)
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
