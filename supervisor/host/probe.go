package host

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// DefaultUIDBase is the first host uid of sandbox uid ranges: far above
// ordinary users and the /etc/subuid ranges tools hand out from 100000.
const DefaultUIDBase = probe.DefaultUIDBase

// Check runs the host probe (probe.Run: namespaces tried by forking,
// cgroup version and controllers, seccomp, landlock ABI, overlay, the uid
// window of pc) and applies the operator's allowDegraded. It returns
// every layer for HealthCheck and, when the supervisor must not start, an
// error: one wrapping ErrCannotIsolate that names every missing required
// layer not allowed (a *probe.MissingError), or one wrapping
// probe.ErrUnknownLayer or probe.ErrNotDegradable for an allowDegraded
// name that is unknown or cannot be degraded (only "seccomp" can). A layer
// allowed to be degraded is reported inactive, its detail starting
// "disabled by --allow-degraded"; the caller must switch it off (seccomp:
// sandbox.Config.NoSeccomp) and log it. grpc.health.v1 stays SERVING on a
// degraded supervisor: it serves, and HealthCheck says with which layers.
func Check(pc probe.Config, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	return resolveLayers(probe.Run(pc), allowDegraded)
}

// resolveLayers converts a probe report to HealthCheck's layers and the
// start-up verdict.
func resolveLayers(r probe.Report, allowDegraded []string) ([]*sandboxv1.IsolationLayer, error) {
	resolved, err := r.Resolve(allowDegraded)
	out := make([]*sandboxv1.IsolationLayer, 0, len(resolved))
	for _, l := range resolved {
		detail := l.Detail
		switch l.Status {
		case probe.StatusDegradedAllowed:
			detail = "disabled by --allow-degraded; " + detail
		case probe.StatusMissing:
			detail = "missing: " + detail
		}
		out = append(out, &sandboxv1.IsolationLayer{Name: l.Name, Available: l.Available, Active: l.Active, Detail: detail})
	}
	if err != nil {
		return out, fmt.Errorf("host: check isolation: %w", err)
	}
	return out, nil
}
