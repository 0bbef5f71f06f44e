package supervisor

import (
	"context"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// runtimeName maps the wire enum to a runtime name.
func (s *Server) runtimeName(r sandboxv1.Runtime) (string, error) {
	switch r {
	case sandboxv1.Runtime_RUNTIME_UNSPECIFIED:
		return s.cfg.DefaultRuntime, nil
	case sandboxv1.Runtime_RUNTIME_GOJA:
		return program.Goja, nil
	case sandboxv1.Runtime_RUNTIME_NODE:
		return program.Node, nil
	case sandboxv1.Runtime_RUNTIME_SHELL:
		return program.Shell, nil
	case sandboxv1.Runtime_RUNTIME_PYTHON:
		return program.Python, nil
	}
	return "", badRequest("runtime", "unknown runtime %d", int32(r))
}

// prepare validates req and builds its job: the runtime by name, the
// limits resolved over the server's defaults and ceilings
// (limits.Resolve), then execution.Runner.Prepare. A deterministic
// request for a runtime other than goja and node (the server's default
// included) is refused: they have no such clock, and the flag would
// promise a repeatable run it cannot give. Its errors are the packages'
// and *requestError; handlers map them with rpcError.
func (s *Server) prepare(ctx context.Context, req *sandboxv1.ExecuteRequest, tests bool) (*execution.Job, error) {
	return s.prepareTests(ctx, req, tests, "")
}

// prepareTests is prepare; in test mode testsCode is the tests, run after
// the request's code ("": the code is the tests).
func (s *Server) prepareTests(ctx context.Context, req *sandboxv1.ExecuteRequest, tests bool, testsCode string) (*execution.Job, error) {
	rt, err := s.runtimeName(req.GetRuntime())
	if err != nil {
		return nil, err
	}
	if req.GetDeterministic() && rt != program.Goja && rt != program.Node {
		return nil, badRequest("deterministic", "deterministic runs need the goja or node runtime, not %s (it has no fixed clock or seeded random generator)", rt)
	}
	l, err := limits.Resolve(req.GetLimits(), req.TimeoutMs, s.cfg.Defaults, s.cfg.Ceilings)
	if err != nil {
		return nil, err
	}
	in := execution.Input{Runtime: rt, Code: req.GetCode(), Stdin: req.GetStdin(), Env: req.GetEnv(), Tests: tests, TestsCode: testsCode, Limits: l,
		Deterministic: req.GetDeterministic(), Seed: req.GetSeed()}
	o := cacheOwner(ctx)
	in.Account, in.Client = o.Principal, o.Client
	if c, ok := req.GetSource().(*sandboxv1.ExecuteRequest_Cached); ok {
		in.Cached = &c.Cached
	}
	return s.runner.Prepare(ctx, in)
}

// submit validates req, admits it through the scheduler and starts it in
// the background. The returned execution is PENDING or RUNNING. Errors
// are the packages' (rpcError maps them): INVALID_ARGUMENT for bad code,
// limits or env; NOT_FOUND for an unknown cached script; UNIMPLEMENTED
// for a runtime this server cannot run; RESOURCE_EXHAUSTED for a full
// queue (QUEUE_FULL, the message naming the bound reached) or, when none
// may wait (--queue-size 0), a memory limit that does not fit the
// memory budget now (MEMORY_BUDGET); UNAVAILABLE while shutting down.
func (s *Server) submit(ctx context.Context, req *sandboxv1.ExecuteRequest) (*registry.Execution, error) {
	return s.submitMode(ctx, req, false)
}

// submitMode is submit; tests runs the code in test mode. The execution
// belongs to the caller's principal.
func (s *Server) submitMode(ctx context.Context, req *sandboxv1.ExecuteRequest, tests bool) (*registry.Execution, error) {
	return s.submitTests(ctx, req, tests, "")
}

// submitTests is submitMode with the tests apart from the code
// (prepareTests).
func (s *Server) submitTests(ctx context.Context, req *sandboxv1.ExecuteRequest, tests bool, testsCode string) (*registry.Execution, error) {
	j, err := s.prepareTests(ctx, req, tests, testsCode)
	if err != nil {
		return nil, err
	}
	j.Owner = caller(ctx).String()
	e, err := s.runner.Submit(j)
	return e, describeFull(err)
}

// caller returns the principal of the call: the one the transport put in
// its context (every call served by ListenAndServe has one), else the
// local principal, which is what a caller authenticated by nothing is.
func caller(ctx context.Context) principal.Principal {
	if p, ok := principal.FromContext(ctx); ok {
		return p
	}
	return principal.Local()
}
