// Package probe writes the answers of the HTTP health probes that
// `execfarm serve --probe-address` and `execfarm mcp --http` serve
// (Kubernetes liveness, readiness and startup probes read the status
// code; people and scripts read the JSON body).
package probe

import (
	"encoding/json"
	"net/http"
)

// Write answers a probe: status code, then body as one line of JSON
// (application/json, never cached). body holds only strings and
// booleans, which always marshal.
func Write(w http.ResponseWriter, code int, body map[string]any) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
