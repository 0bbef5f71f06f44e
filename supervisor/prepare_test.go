package supervisor

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// preparingServer returns a Server that can prepare requests (default
// limits, goja by default, no cache, no node) and runs nothing: it starts
// no goroutine.
func preparingServer(t testing.TB) *Server {
	t.Helper()
	ids, err := nodeid.NewIssuer("localhost")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings()}, reg: registry.New(registry.Config{IDs: ids}), ids: ids}
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.runner, err = execution.New(execution.Config{Sandbox: &s.cfg.Sandbox, Defaults: s.cfg.Defaults, Registry: s.reg, Scheduler: sched})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzPrepare feeds request validation arbitrary code, runtimes, env and
// limits: it must never panic; every refusal, mapped by rpcError, must be
// a client-side code (never INTERNAL, never UNKNOWN); and every
// INVALID_ARGUMENT must name the request field at fault.
func FuzzPrepare(f *testing.F) {
	f.Add("console.log(1)", int32(0), "K", "v", int64(0), int32(0), false)
	f.Add("const x = ;", int32(1), "", "", int64(-1), int32(-5), true)
	f.Add("echo hi", int32(3), "A=B", "x\x00y", int64(1<<40), int32(1<<30), false)
	f.Add("", int32(99), "PATH", "/bin", int64(64<<20), int32(100), true)
	f.Add("await 1", int32(2), "", "", int64(0), int32(0), false)
	f.Add("echo a\x00b", int32(3), "", "", int64(0), int32(0), false)
	s := preparingServer(f)
	f.Fuzz(func(t *testing.T, code string, rt int32, k, v string, mem int64, timeout int32, tests bool) {
		req := &sandboxv1.ExecuteRequest{
			Source:  &sandboxv1.ExecuteRequest_Code{Code: code},
			Runtime: sandboxv1.Runtime(rt),
			Env:     map[string]string{k: v},
			Limits:  &sandboxv1.ResourceLimits{MaxMemoryBytes: mem},
		}
		if timeout != 0 {
			req.TimeoutMs = &timeout
		}
		_, err := s.prepare(context.Background(), req, tests)
		if err == nil {
			return
		}
		st, ok := status.FromError(rpcError(err))
		if !ok {
			t.Fatalf("rpcError(%v) is not a gRPC status", err)
		}
		switch st.Code() {
		case codes.InvalidArgument:
			if f := faultOf(err); f.field == "" || f.reason == "" {
				t.Fatalf("INVALID_ARGUMENT %v names no field or reason: %+v", err, f)
			}
		case codes.NotFound, codes.Unimplemented:
		default:
			t.Fatalf("code %s for %q: %v", st.Code(), code, err)
		}
	})
}

// TestCodeThatBreaksTheTransformIsRefused: code nested past the transform's
// stack (which, transformed in the supervisor's own process, ended the
// supervisor with a fatal stack overflow), and code whose program is over
// what a worker takes once transformed, are INVALID_ARGUMENT naming the
// bound, before a sandbox is spent; the server prepares the next request.
func TestCodeThatBreaksTheTransformIsRefused(t *testing.T) {
	s := preparingServer(t)
	const depth = 300000 // ~1.4 GB of esbuild's stack
	nested := "const x = " + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth) + ";"
	for _, tc := range []struct {
		name, code, reason, msg string
	}{
		{"nested parentheses", nested, "TRANSFORM_LIMIT", "nests too deeply"},
		// The transform's CPU time is its ~4 MiB output's, its bound
		// the input's (CPUTimeBase + CPUTimePerKiB a KiB): a comment
		// esbuild drops adds 6 s of bound for little work, so that the
		// lowering ends within it in a -race build. (A loaded host no
		// longer counts: the bound is CPU time, not wall-clock time.)
		{"lowering past the worker's request", strings.Repeat("{ using a = b }\n", 20000) + "//" + strings.Repeat("x", 600<<10) + "\n", "PROGRAM_TOO_LARGE", "once transformed"},
	} {
		req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: tc.code}, Runtime: sandboxv1.Runtime_RUNTIME_GOJA}
		_, err := s.prepare(context.Background(), req, false)
		st := status.Convert(rpcError(err))
		if f := faultOf(err); st.Code() != codes.InvalidArgument || f.reason != tc.reason || f.field != "code" || !strings.Contains(st.Message(), tc.msg) {
			t.Errorf("%s: %v (%+v); want INVALID_ARGUMENT %s saying %q", tc.name, st, f, tc.reason, tc.msg)
		}
		ok := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "console.log(1)"}, Runtime: sandboxv1.Runtime_RUNTIME_GOJA}
		if _, err := s.prepare(context.Background(), ok, false); err != nil {
			t.Fatalf("after %s: %v", tc.name, err)
		}
	}
}

// TestNULInShellCodeIsRefused: shell and python code with a NUL byte is
// INVALID_ARGUMENT naming code (reason NUL_IN_ARGUMENT), not a sandbox
// spent on a start that fails INTERNAL; so is an env value with one.
func TestNULInShellCodeIsRefused(t *testing.T) {
	s := preparingServer(t)
	for _, tc := range []struct {
		name, code, field, reason string
		rt                        sandboxv1.Runtime
		env                       map[string]string
	}{
		{"shell code", "echo a\x00b", "code", "NUL_IN_ARGUMENT", sandboxv1.Runtime_RUNTIME_SHELL, nil},
		{"python code", "print(1)\x00", "code", "NUL_IN_ARGUMENT", sandboxv1.Runtime_RUNTIME_PYTHON, nil},
		{"env value", "echo $A", "env", "INVALID_ENV", sandboxv1.Runtime_RUNTIME_SHELL, map[string]string{"A": "a\x00b"}},
	} {
		req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: tc.code}, Runtime: tc.rt, Env: tc.env}
		_, err := s.prepare(context.Background(), req, false)
		st, f := status.Convert(rpcError(err)), faultOf(err)
		if st.Code() != codes.InvalidArgument || f.field != tc.field || f.reason != tc.reason {
			t.Errorf("%s with a NUL: %v (%+v); want INVALID_ARGUMENT %s naming %s", tc.name, st, f, tc.reason, tc.field)
		}
	}
}

// TestDeterministicNeedsGojaOrNode: a deterministic request for shell or
// python (named, or the server's default) is INVALID_ARGUMENT naming the
// field deterministic, for Execute and ExecuteTest alike; goja and node
// prepare.
func TestDeterministicNeedsGojaOrNode(t *testing.T) {
	s := preparingServer(t)
	for _, tc := range []struct {
		name    string
		rt      sandboxv1.Runtime
		def     string // the server's default runtime
		refused bool
	}{
		{"shell", sandboxv1.Runtime_RUNTIME_SHELL, "goja", true},
		{"python", sandboxv1.Runtime_RUNTIME_PYTHON, "goja", true},
		{"the default, shell", sandboxv1.Runtime_RUNTIME_UNSPECIFIED, "shell", true},
		{"goja", sandboxv1.Runtime_RUNTIME_GOJA, "shell", false},
	} {
		for _, tests := range []bool{false, true} {
			s.cfg.DefaultRuntime = tc.def
			req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}, Runtime: tc.rt, Deterministic: true, Seed: 7}
			_, err := s.prepare(context.Background(), req, tests)
			st, f := status.Convert(rpcError(err)), faultOf(err)
			switch {
			case tc.refused && (st.Code() != codes.InvalidArgument || f.field != "deterministic" || !strings.Contains(st.Message(), "goja or node")):
				t.Errorf("%s (tests %v): %v (%+v); want INVALID_ARGUMENT naming deterministic", tc.name, tests, st, f)
			case !tc.refused && err != nil:
				t.Errorf("%s (tests %v): %v; want it prepared", tc.name, tests, err)
			}
		}
	}
}
