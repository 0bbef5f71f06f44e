package supervisor

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/profile"
	"github.com/execfarm/execfarm/supervisor/session"
)

// TestCreateOverAProfile: a create takes its profile's runtime, limits,
// lifetime and idle timeout where it gives none, its own where it does
// (within the ceilings); no profile is "default"; an unknown one is
// INVALID_ARGUMENT naming the profiles there are.
func TestCreateOverAProfile(t *testing.T) {
	set, err := profile.Parse([]byte(`
profiles:
  default: {runtime: shell, limits: {max_memory_bytes: 268435456}}
  py: {runtime: python, limits: {max_memory_bytes: 1073741824, max_cpu_percent: 200}, shutdownAfterSeconds: 60, idleTimeoutSeconds: 30}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings(), Profiles: set},
		sessions: newSessions(t, session.Config{})}
	p, err := s.createParams(&execfarmv1.CreateSandboxRequest{})
	if err != nil || p.Profile != "default" || p.Runtime != "shell" || p.Limits.MemoryBytes != 256<<20 || p.Lifetime != nil || p.IdleTimeout != 0 {
		t.Errorf("no profile: %+v, %v", p, err)
	}
	p, err = s.createParams(&execfarmv1.CreateSandboxRequest{Profile: "py"})
	if err != nil || p.Runtime != "python" || p.Limits.MemoryBytes != 1<<30 || p.Limits.CPUPercent != 200 || *p.Lifetime != time.Minute || p.IdleTimeout != 30*time.Second {
		t.Errorf("py: %+v, %v", p, err)
	}
	life, idle := int64(120), int64(0)
	p, err = s.createParams(&execfarmv1.CreateSandboxRequest{Profile: "py", Runtime: sandboxv1.Runtime_RUNTIME_GOJA,
		Limits: &sandboxv1.ResourceLimits{MaxCpuPercent: 50}, ShutdownAfterSeconds: &life, IdleTimeoutSeconds: &idle})
	if err != nil || p.Runtime != "goja" || p.Limits.MemoryBytes != 1<<30 || p.Limits.CPUPercent != 50 || *p.Lifetime != 2*time.Minute || p.IdleTimeout != 0 {
		t.Errorf("py overridden: %+v, %v", p, err)
	}
	_, err = s.createParams(&execfarmv1.CreateSandboxRequest{Profile: "py", Limits: &sandboxv1.ResourceLimits{MaxMemoryBytes: 1 << 40}})
	if st := status.Convert(rpcError(err)); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "max_memory_bytes") {
		t.Errorf("over the ceiling: %v", st)
	}
	_, err = s.createParams(&execfarmv1.CreateSandboxRequest{Profile: "gpu"})
	if st := status.Convert(rpcError(err)); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), `"gpu"`) || !strings.Contains(st.Message(), "default, py") {
		t.Errorf("unknown profile: %v", st)
	}
}

// newSessions is a Manager for createParams, which starts nothing: its
// Backend and Runner are never called.
func newSessions(t *testing.T, cfg session.Config) *session.Manager {
	t.Helper()
	cfg.Backend, cfg.Runner = struct{ session.Backend }{}, struct{ session.Runner }{}
	m, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCreateDurationsAsAsked: a lifetime or idle timeout in seconds too
// large for a time.Duration is refused with the seconds as asked and the
// maximum (the lifetime ceiling, else the largest duration), never the
// saturated 9223372036 s; over a ceiling it is RESOURCE_EXHAUSTED (a
// quota), past the largest duration INVALID_ARGUMENT.
func TestCreateDurationsAsAsked(t *testing.T) {
	const huge = int64(1) << 53
	for _, tt := range []struct {
		name       string
		ceiling    time.Duration
		life, idle *int64
		code       codes.Code
		want       []string
	}{
		{"lifetime over the ceiling", 24 * time.Hour, ptr(huge), nil, codes.ResourceExhausted, []string{"9007199254740992s", "86400s"}},
		{"lifetime of MaxInt64 over the ceiling", 24 * time.Hour, ptr(int64(1<<63 - 1)), nil, codes.ResourceExhausted, []string{"9223372036854775807s", "86400s"}},
		{"lifetime past a duration, no ceiling", session.NoLifetimeCeiling, ptr(huge), nil, codes.InvalidArgument, []string{"shutdown_after_seconds", "9007199254740992 s", "maximum 9223372036 s"}},
		{"idle timeout past a duration", 0, nil, ptr(huge), codes.InvalidArgument, []string{"idle_timeout_seconds", "9007199254740992 s", "maximum 9223372036 s"}},
		{"negative idle timeout", 0, nil, ptr(int64(-1)), codes.InvalidArgument, []string{"idle_timeout_seconds", "negative"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{cfg: Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings(), Profiles: profile.Default()},
				sessions: newSessions(t, session.Config{MaxLifetime: tt.ceiling})}
			_, err := s.createParams(&execfarmv1.CreateSandboxRequest{ShutdownAfterSeconds: tt.life, IdleTimeoutSeconds: tt.idle})
			st := status.Convert(rpcError(err))
			if st.Code() != tt.code {
				t.Errorf("code %v, want %v: %v", st.Code(), tt.code, st.Message())
			}
			for _, w := range tt.want {
				if !strings.Contains(st.Message(), w) {
					t.Errorf("%q does not name %q", st.Message(), w)
				}
			}
		})
	}
}

// TestCreateOfAnUnavailableRuntime: a sandbox of a runtime this server
// lacks (node without its bundle), asked for or from its profile, is
// UNIMPLEMENTED RUNTIME_UNAVAILABLE, as Execute answers, before it holds a
// place; the sandbox itself never starts.
func TestCreateOfAnUnavailableRuntime(t *testing.T) {
	set, err := profile.Parse([]byte(`
profiles:
  js: {runtime: node}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings(), Profiles: set}}
	for name, req := range map[string]*execfarmv1.CreateSandboxRequest{
		"asked":      {Runtime: sandboxv1.Runtime_RUNTIME_NODE},
		"by profile": {Profile: "js"},
	} {
		_, err := s.createParams(req)
		if st := status.Convert(rpcError(err)); st.Code() != codes.Unimplemented || faultOf(err).reason != "RUNTIME_UNAVAILABLE" {
			t.Errorf("%s: %v", name, st)
		}
	}
	if _, err := s.createParams(&execfarmv1.CreateSandboxRequest{Profile: "js", Runtime: sandboxv1.Runtime_RUNTIME_SHELL}); err != nil {
		t.Errorf("shell over the node profile: %v", err)
	}
}

// TestNewRefusesABadProfile: a profile over the server's ceilings, or
// with a lifetime over its ceiling, stops New, naming it.
func TestNewRefusesABadProfile(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"profiles: {huge: {limits: {max_memory_bytes: 68719476736}}}", `"huge"`},
		{"profiles: {long: {shutdownAfterSeconds: 172800}}", `"long": shutdownAfterSeconds`},
	} {
		set, err := profile.Parse([]byte(tt.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(Config{Sandbox: validSandboxConfig(t), Profiles: set})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New with %s: %v, want %q", tt.file, err, tt.want)
		}
	}
}
