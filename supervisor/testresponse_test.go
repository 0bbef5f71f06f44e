package supervisor

import (
	"strings"
	"testing"

	"github.com/execfarm/execfarm/supervisor/registry"
)

// TestTestResponseFromAttachment: ExecuteTest's tests come from the
// result's Attachment (counted in the registry's retention budget), and a
// run whose results the registry dropped says so instead of passing for a
// run that never reported.
func TestTestResponseFromAttachment(t *testing.T) {
	results := `{"name":"a","passed":true,"duration_ms":2}` + "\n" +
		`{"name":"b","passed":false,"error":"boom","duration_ms":1}` + "\n" +
		`{"summary":{"total":2,"passed":1,"failed":1,"skipped":0}}` + "\n"
	done := registry.Result{State: registry.StateCompleted, Reason: registry.ReasonExited, Success: true}
	for _, tc := range []struct {
		name    string
		res     func(registry.Result) registry.Result
		tests   int
		errText string
	}{
		{"kept", func(r registry.Result) registry.Result { r.Attachment = []byte(results); return r }, 2, ""},
		{"dropped", func(r registry.Result) registry.Result { r.AttachmentDropped = true; return r }, 0, "dropped"},
		{"forged", func(r registry.Result) registry.Result {
			r.Attachment = []byte(`{"name":"a","passed":true}` + "\n" + `{"forged":true}` + "\n")
			return r
		}, 1, "written by the code under test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := testResponse("id", tc.res(done), heads{})
			if len(resp.GetTests()) != tc.tests || resp.GetSuccess() {
				t.Errorf("tests %v, success %v", resp.GetTests(), resp.GetSuccess())
			}
			if tc.errText != "" && !strings.Contains(resp.GetError(), tc.errText) {
				t.Errorf("error %q does not say %q", resp.GetError(), tc.errText)
			}
		})
	}
}
