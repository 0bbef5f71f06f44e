//go:build linux

package prodisco

import (
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/execfarm/execfarm/test/compat/prodiscopb"
)

// TestProDiscoErrorStyle: with `serve --error-style prodisco`, the
// requests where seed 000's error table and ProDisco's own server differ
// are answered as ProDisco's server answers them (sandbox-service.ts and
// executor.ts in harche/ProDisco), so that an application written against
// it, which reads success false, keeps working: an unknown cached script,
// a syntax error and a request without code are OK with success false
// and ProDisco's message (ExecuteAsync: INVALID_ARGUMENT with the
// message, as ProDisco); empty code runs; cancelling a finished execution
// is success false, "Execution already finished"; ExecuteTest without
// tests is success false, "Tests parameter is required". Off by default:
// TestProDiscoFields' "seed error table" checks the statuses.
func TestProDiscoErrorStyle(t *testing.T) {
	for _, rt := range []string{"goja", "node"} {
		t.Run(rt, func(t *testing.T) {
			c := startServersWith(t, []string{"--error-style", "prodisco"}, rt)[rt].client
			cached := &pb.ExecuteRequest{Source: &pb.ExecuteRequest_Cached{Cached: "no-such-script"}}
			for _, tc := range []struct {
				name  string
				req   *pb.ExecuteRequest
				error string // what ProDisco's error holds
			}{
				{"unknown cached script", cached, `Cached "no-such-script" not found`},
				{"syntax error", codeReq("const x = {"), "Expected"},
				{"no source", &pb.ExecuteRequest{}, "Either code or cached must be provided"},
			} {
				resp, err := c.Execute(callCtx(t), tc.req)
				if err != nil || resp.GetSuccess() || !strings.Contains(resp.GetError(), tc.error) {
					t.Errorf("Execute, %s: %v, %v; want OK, success false, error holding %q", tc.name, resp, err, tc.error)
				}
				chunks, res := stream(t, c, tc.req)
				if len(chunks) != 0 || res.GetSuccess() || res.GetState() != pb.ExecutionState_EXECUTION_STATE_FAILED || !strings.Contains(res.GetError(), tc.error) {
					t.Errorf("ExecuteStream, %s: chunks %q, result %v; want one FAILED result holding %q", tc.name, chunks, res, tc.error)
				}
			}
			for _, req := range []*pb.ExecuteRequest{cached, {}} {
				if _, err := c.ExecuteAsync(callCtx(t), req); status.Code(err) != codes.InvalidArgument ||
					!(strings.Contains(status.Convert(err).Message(), "not found") || strings.Contains(status.Convert(err).Message(), "must be provided")) {
					t.Errorf("ExecuteAsync %v: %v; want INVALID_ARGUMENT with ProDisco's message", req, err)
				}
			}
			// Empty code runs, printing nothing, as in ProDisco.
			if resp, err := c.Execute(callCtx(t), codeReq("")); err != nil || !resp.GetSuccess() || resp.GetOutput() != "" {
				t.Errorf("Execute of empty code: %v, %v; want success, no output", resp, err)
			}
			ctx := callCtx(t)
			a, err := c.ExecuteAsync(ctx, codeReq(`console.log("quick")`))
			if err != nil {
				t.Fatal(err)
			}
			// Execution ids are UUIDs, as ProDisco's.
			if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a.GetExecutionId()) {
				t.Errorf("execution id %q: want a UUID", a.GetExecutionId())
			}
			if _, err := c.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: "00000000-0000-4000-8000-000000000000"}); status.Code(err) != codes.NotFound {
				t.Errorf("GetExecution of an unknown UUID: %v; want NOT_FOUND", err)
			}
			if st, err := c.GetExecution(ctx, &pb.GetExecutionRequest{ExecutionId: a.GetExecutionId(), Wait: true}); err != nil || st.GetState() != pb.ExecutionState_EXECUTION_STATE_COMPLETED {
				t.Fatalf("GetExecution(wait): %v, %v", st, err)
			}
			cr, err := c.CancelExecution(ctx, &pb.CancelExecutionRequest{ExecutionId: a.GetExecutionId()})
			if err != nil || cr.GetSuccess() || cr.GetMessage() != "Execution already finished" || cr.GetState() != pb.ExecutionState_EXECUTION_STATE_COMPLETED {
				t.Errorf("CancelExecution of a finished execution: %v, %v; want OK, success false, COMPLETED, \"Execution already finished\"", cr, err)
			}
			// An unknown id stays NOT_FOUND, as in ProDisco.
			if _, err := c.CancelExecution(ctx, &pb.CancelExecutionRequest{ExecutionId: "invalid-id"}); status.Code(err) != codes.NotFound {
				t.Errorf("CancelExecution of an unknown id: %v; want NOT_FOUND", err)
			}
			for _, tests := range []string{"", "  \n"} {
				tr, err := c.ExecuteTest(ctx, &pb.ExecuteTestRequest{Tests: tests})
				if err != nil || tr.GetSuccess() || tr.GetError() != "Tests parameter is required" || tr.GetSummary().GetTotal() != 0 {
					t.Errorf("ExecuteTest of %q: %v, %v; want OK, success false, \"Tests parameter is required\"", tests, tr, err)
				}
			}
			if tr, err := c.ExecuteTest(ctx, &pb.ExecuteTestRequest{Tests: "test('broken', () => {\n  const x = {\n});"}); err != nil || tr.GetSuccess() || tr.GetError() == "" {
				t.Errorf("ExecuteTest with a syntax error: %v, %v; want OK, success false, the error", tr, err)
			}
			// The cache in ProDisco's shapes: content_hash is 12 hex digits
			// (the name's), and the filter matches names only.
			saved, err := c.Execute(ctx, codeReq("// describes pods\nconsole.log(1)"))
			if err != nil || saved.GetCached() == nil {
				t.Fatalf("Execute to cache: %v, %v", saved, err)
			}
			if h := saved.GetCached().GetContentHash(); len(h) != 12 || !strings.Contains(saved.GetCached().GetName(), "-"+h+".ts") {
				t.Errorf("content_hash %q of %q: want the 12 hex digits of the name", h, saved.GetCached().GetName())
			}
			for filter, listed := range map[string]bool{"pods": false, "SCRIPT-": true, saved.GetCached().GetContentHash(): true, "script-*": false} {
				lc, err := c.ListCache(ctx, &pb.ListCacheRequest{Filter: &filter})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, e := range lc.GetEntries() {
					found = found || e.GetName() == saved.GetCached().GetName()
					if len(e.GetContentHash()) != 12 {
						t.Errorf("ListCache(%q): content_hash %q, want 12 hex digits", filter, e.GetContentHash())
					}
				}
				if found != listed {
					t.Errorf("ListCache(%q): %v; want %s listed %v (names only, no globs)", filter, lc, saved.GetCached().GetName(), listed)
				}
			}
		})
	}
}
