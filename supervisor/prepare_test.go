package supervisor

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// FuzzPrepare feeds request validation arbitrary code, runtimes, env and
// limits: it must never panic, and every refusal must be a gRPC status
// with a client-side code (never INTERNAL, never UNKNOWN).
func FuzzPrepare(f *testing.F) {
	f.Add("console.log(1)", int32(0), "K", "v", int64(0), int32(0), false)
	f.Add("const x = ;", int32(1), "", "", int64(-1), int32(-5), true)
	f.Add("echo hi", int32(3), "A=B", "x\x00y", int64(1<<40), int32(1<<30), false)
	f.Add("", int32(99), "PATH", "/bin", int64(64<<20), int32(100), true)
	f.Add("await 1", int32(2), "", "", int64(0), int32(0), false)
	s := &Server{cfg: Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings()}}
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
		_, err := s.prepare(req, tests)
		if err == nil {
			return
		}
		st, ok := status.FromError(err)
		if !ok {
			t.Fatalf("error %v is not a gRPC status", err)
		}
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.Unimplemented:
		default:
			t.Fatalf("code %s for %q: %v", st.Code(), code, err)
		}
	})
}
