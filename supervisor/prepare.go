package supervisor

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/scheduler"
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
	return "", status.Errorf(codes.InvalidArgument, "unknown runtime %d", int32(r))
}

// prepare validates req and builds its job. Errors are gRPC statuses:
// INVALID_ARGUMENT for bad code, limits or env; NOT_FOUND for an unknown
// cached script; UNIMPLEMENTED for a runtime this server cannot run.
func (s *Server) prepare(req *sandboxv1.ExecuteRequest, tests bool) (*execution.Job, error) {
	rt, err := s.runtimeName(req.GetRuntime())
	if err != nil {
		return nil, err
	}
	code, cachedName, err := s.source(req)
	if err != nil {
		return nil, err
	}
	l, err := limits.Resolve(req.GetLimits(), req.TimeoutMs, s.cfg.Defaults, s.cfg.Ceilings)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	wreq, err := program.Build(program.Input{Runtime: rt, Code: code, Stdin: req.GetStdin(), Env: req.GetEnv(), Tests: tests, Node: s.cfg.Node})
	if err != nil {
		return nil, programError(err)
	}
	wreq.Rlimits = l.Rlimits()
	return &execution.Job{Runtime: rt, Request: wreq, Limits: l, Code: code, CachedName: cachedName,
		Cacheable: !tests && cachedName == "" && s.cfg.Cache != nil && (rt == program.Goja || rt == program.Node)}, nil
}

// source returns the code to run: the request's code, or the cached script
// it names (NOT_FOUND when there is none, INVALID_ARGUMENT when the name
// matches several).
func (s *Server) source(req *sandboxv1.ExecuteRequest) (code, cachedName string, err error) {
	c, ok := req.GetSource().(*sandboxv1.ExecuteRequest_Cached)
	if !ok {
		return req.GetCode(), "", nil
	}
	if s.cfg.Cache == nil {
		return "", "", status.Errorf(codes.NotFound, "cached script %q not found: the script cache is disabled", c.Cached)
	}
	e, code, err := s.cfg.Cache.Find(c.Cached)
	switch {
	case errors.Is(err, cache.ErrNotFound):
		return "", "", status.Errorf(codes.NotFound, "cached script %q not found", c.Cached)
	case errors.Is(err, cache.ErrAmbiguous):
		return "", "", status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		return "", "", status.Error(codes.Internal, err.Error())
	}
	return code, e.Name, nil
}

// programError maps program.Build's errors to gRPC statuses.
func programError(err error) error {
	var se *transform.SyntaxError
	switch {
	case errors.As(err, &se):
		return status.Error(codes.InvalidArgument, se.Error())
	case errors.Is(err, transform.ErrEmptyCode):
		return status.Error(codes.InvalidArgument, "code is empty")
	case errors.Is(err, program.ErrUnavailable):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, program.ErrUnknownRuntime), errors.Is(err, program.ErrBadEnv), errors.Is(err, program.ErrNoTestMode):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// submit validates req, admits it through the scheduler and starts it in
// the background. The returned execution is PENDING or RUNNING.
func (s *Server) submit(req *sandboxv1.ExecuteRequest) (*registry.Execution, error) {
	return s.submitMode(req, false)
}

// submitMode is submit; tests runs the code in test mode.
func (s *Server) submitMode(req *sandboxv1.ExecuteRequest, tests bool) (*registry.Execution, error) {
	j, err := s.prepare(req, tests)
	if err != nil {
		return nil, err
	}
	e, err := s.runner.Submit(j)
	switch {
	case errors.Is(err, execution.ErrShuttingDown):
		return nil, status.Error(codes.Unavailable, "supervisor is shutting down")
	case errors.Is(err, scheduler.ErrQueueFull):
		return nil, status.Errorf(codes.ResourceExhausted, "execution queue full (%d waiting)", s.cfg.QueueSize)
	case err != nil:
		return nil, status.Error(codes.Internal, err.Error())
	}
	return e, nil
}
