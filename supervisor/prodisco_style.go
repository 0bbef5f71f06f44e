package supervisor

import (
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// Error styles (Config.ErrorStyle, `serve --error-style`).
const (
	// ErrorStyleExecfarm answers as seed 000's error table says: a
	// request refused before anything runs is a gRPC status.
	ErrorStyleExecfarm = "execfarm"
	// ErrorStyleProDisco answers as ProDisco's server does where the two
	// differ, for applications written against it that read `success:
	// false`: an unknown cached script, a syntax error and a request
	// without code are an OK answer with success false and ProDisco's
	// message (Execute, ExecuteStream's one result chunk; ExecuteAsync:
	// INVALID_ARGUMENT with the message, as ProDisco, but for a syntax
	// error, which stays INVALID_ARGUMENT where ProDisco starts an
	// execution that fails); empty code runs, as code of only whitespace;
	// cancelling a finished execution is success false, its state and
	// "Execution already finished"; ExecuteTest without tests is success
	// false and "Tests parameter is required".
	ErrorStyleProDisco = "prodisco"
)

// ProDisco's messages for the requests it answers with success false.
const (
	noSourceMessage = "Either code or cached must be provided"
	noTestsMessage  = "Tests parameter is required"
)

// maxEchoedName bounds how much of a client's cached name a message
// echoes, bytes.
const maxEchoedName = 256

func (s *Server) proDiscoStyle() bool { return s.cfg.ErrorStyle == ErrorStyleProDisco }

// proDiscoRequest is req as the prodisco style runs it: empty code (the
// field set, to "") becomes one space, which runs as ProDisco runs empty
// code, printing nothing. req itself is not changed.
func (s *Server) proDiscoRequest(req *sandboxv1.ExecuteRequest) *sandboxv1.ExecuteRequest {
	if !s.proDiscoStyle() {
		return req
	}
	if c, ok := req.GetSource().(*sandboxv1.ExecuteRequest_Code); ok && c.Code == "" {
		r := proto.CloneOf(req) // its code is empty: a copy of the rest
		r.Source = &sandboxv1.ExecuteRequest_Code{Code: " "}
		return r
	}
	return req
}

// proDiscoRefusal returns ProDisco's message for a request that submit
// refused with err and that ProDisco's server answers with success false
// (ok), in the prodisco style only.
func (s *Server) proDiscoRefusal(req *sandboxv1.ExecuteRequest, err error) (msg string, ok bool) {
	if !s.proDiscoStyle() {
		return "", false
	}
	var syn *transform.SyntaxError
	switch {
	case req.GetSource() == nil && errors.Is(err, transform.ErrEmptyCode):
		return noSourceMessage, true
	case errors.Is(err, cache.ErrNotFound):
		name := req.GetCached()
		if len(name) > maxEchoedName {
			name = name[:maxEchoedName] + "..."
		}
		return `Cached "` + name + `" not found`, true
	case errors.As(err, &syn):
		return syn.Error(), true
	}
	return "", false
}

// proDiscoAsyncRefusal is ExecuteAsync's refusal in the prodisco style:
// INVALID_ARGUMENT with ProDisco's message for an unknown cached script
// and a request without code, as ProDisco's server answers; other errors
// as they are.
func (s *Server) proDiscoAsyncRefusal(req *sandboxv1.ExecuteRequest, err error) error {
	var syn *transform.SyntaxError
	if msg, ok := s.proDiscoRefusal(req, err); ok && !errors.As(err, &syn) {
		return badRequest(sourceField(req), "%s", msg)
	}
	return err
}

// sourceField names the request's source field for a BadRequest.
func sourceField(req *sandboxv1.ExecuteRequest) string {
	if _, ok := req.GetSource().(*sandboxv1.ExecuteRequest_Cached); ok {
		return "cached"
	}
	return "code"
}

// failedResult is the result of a request ProDisco answers with success
// false before anything runs.
func failedResult(msg string) *sandboxv1.ExecuteResult {
	return &sandboxv1.ExecuteResult{Success: false, Error: &msg, State: sandboxv1.ExecutionState_EXECUTION_STATE_FAILED}
}

// proDiscoStreamRefusal sends ExecuteStream's one chunk for a refused
// request: its result, with no execution id, as ProDisco's server.
func proDiscoStreamRefusal(stream sandboxv1.SandboxService_ExecuteStreamServer, msg string) error {
	return stream.Send(&sandboxv1.ExecuteChunk{TimestampMs: time.Now().UnixMilli(),
		Chunk: &sandboxv1.ExecuteChunk_Result{Result: failedResult(msg)}})
}

// proDiscoCancelFinished is CancelExecution's answer for an execution
// that had ended, in the prodisco style (ok).
func (s *Server) proDiscoCancelFinished(e *registry.Execution, err error) (*sandboxv1.CancelExecutionResponse, bool) {
	if !s.proDiscoStyle() || !errors.Is(err, registry.ErrTerminal) {
		return nil, false
	}
	state := e.State()
	if res, ok := e.Result(); ok {
		state = res.State
	}
	return &sandboxv1.CancelExecutionResponse{State: stateToProto(state), Message: ptr(alreadyFinished)}, true
}

// proDiscoTestRefusal is ExecuteTest's answer for a request ProDisco
// answers with success false (no tests; a syntax error), in the prodisco
// style (ok).
func (s *Server) proDiscoTestRefusal(msg string) *sandboxv1.ExecuteTestResponse {
	return &sandboxv1.ExecuteTestResponse{Success: false, Error: &msg, Summary: &sandboxv1.TestSummary{}}
}

// proDiscoCacheFilter keeps the entries whose name holds filter, without
// regard to case, as ProDisco's ListCache filters ('*' is a character
// like the others); "" keeps all.
func proDiscoCacheFilter(entries []cache.Entry, filter string) []cache.Entry {
	if filter == "" {
		return entries
	}
	lower := strings.ToLower(filter)
	return slices.DeleteFunc(entries, func(e cache.Entry) bool { return !strings.Contains(strings.ToLower(e.Name), lower) })
}
