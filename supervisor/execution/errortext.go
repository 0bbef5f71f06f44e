package execution

import (
	"strings"

	"github.com/execfarm/execfarm/internal/utf8text"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// maxErrorText bounds the stderr tail a result's error quotes, bytes.
const maxErrorText = 4096

// errorText is res's error as ProDisco's `error` field gives it, the same
// in every reply that carries the result. It differs from classify's only
// for a program that exited with a non-zero code by itself: a JavaScript
// runtime's (a job with a console channel) is the message of the error
// that ended it, as the runtime reported it (an Error's message alone,
// without "Uncaught" and the stack, which stay in stderr); another
// runtime's is the tail of its stderr, at most maxErrorText bytes (a
// Python traceback ends with the exception). Without either, classify's
// "exited with code N" stays.
func (r *run) errorText(res registry.Result) string {
	if res.Reason != registry.ReasonExited || res.State != registry.StateFailed {
		return res.Error
	}
	if r.j.Request.GetConsole() {
		if msg, ok := r.console.Thrown(); ok {
			return msg
		}
		return res.Error
	}
	written := r.e.Output(registry.Stderr).WrittenBytes
	tail, _, _, err := r.e.Read(registry.Stderr, max(0, written-maxErrorText))
	if s := strings.TrimSpace(utf8text.Bytes(tail)); err == nil && s != "" {
		return s
	}
	return res.Error
}
