package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/seccomp"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// ErrHostCannotIsolate is returned when a required isolation layer is
// missing and the operator did not allow running without it.
var ErrHostCannotIsolate = errors.New("supervisor: host cannot isolate")

// CheckHost probes the isolation layers this host offers. It returns the
// layers for HealthCheck and an error wrapping ErrHostCannotIsolate that
// names every missing layer not listed in allowDegraded ("seccomp",
// "cgroup", "user-namespace"). A layer allowed to be missing is reported
// inactive; sandboxes then run without it, which the caller must make
// loud.
func CheckHost(cg cgroup.Config, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	allowed := map[string]bool{}
	for _, a := range allowDegraded {
		allowed[a] = true
	}
	var layers []*sandboxv1.IsolationLayer
	var missing []string
	add := func(name string, ok bool, detail string) {
		layers = append(layers, &sandboxv1.IsolationLayer{Name: name, Available: ok, Active: ok, Detail: detail})
		if !ok && !allowed[name] {
			missing = append(missing, fmt.Sprintf("%s (%s)", name, detail))
		}
	}
	for _, ns := range []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"} {
		_, err := os.Stat("/proc/self/ns/" + ns)
		detail := "/proc/self/ns/" + ns
		if err != nil {
			detail = err.Error()
		}
		add(ns+"-namespace", err == nil, detail)
	}
	pr := cgroup.Probe(cg)
	detail := pr.Mode.String()
	if pr.Err != nil {
		detail = pr.Err.Error()
	} else if m := pr.Missing(); len(m) > 0 {
		detail = fmt.Sprintf("%s, missing controllers %v", pr.Mode, m)
	}
	add("cgroup", pr.OK(), detail)
	ok, why := seccomp.Supported()
	add("seccomp", ok, why)
	if len(missing) > 0 {
		return layers, fmt.Errorf("%w: missing %v (name a layer in --allow-degraded to run without it)", ErrHostCannotIsolate, missing)
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
	g := grpc.NewServer(opts...)
	s.Register(g)
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
