//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeNotUTF8IsRefused: a program or tests file that is not valid
// UTF-8 is refused by the client (126), naming the offset of the first
// bad byte and that the API carries code as text. A red-team pass found
// `execfarm run FILE` of `printf 'echo \xff\n'` exiting 125 with
// "INTERNAL: grpc: error while marshaling: string field contains invalid
// UTF-8", as if execfarm had failed.
func TestCodeNotUTF8IsRefused(t *testing.T) {
	requireServe(t)
	bad := filepath.Join(t.TempDir(), "bad.sh")
	if err := os.WriteFile(bad, []byte("echo \xff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "code.js")
	if err := os.WriteFile(good, []byte("export const x = 1;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--runtime", "shell", bad},
		{"run", "--runtime", "shell", "-e", "echo \xff\n"},
		{"test", bad, "--code", good},
		{"test", good, "--code", bad},
	} {
		r := execfarm(t, args...)
		if r.code != 126 || !strings.Contains(r.stderr, "not valid UTF-8") || !strings.Contains(r.stderr, "offset 5") ||
			!strings.Contains(r.stderr, "carries code as text") || strings.Contains(r.stderr, "INTERNAL") {
			t.Errorf("execfarm %q: exit %d, stderr %q; want 126 naming offset 5 and that code is text", args, r.code, r.stderr)
		}
	}
}
