//go:build linux

package cli

import (
	"strings"
	"testing"
	"time"
)

// newSandbox creates a session sandbox on the suite's server and deletes
// it when the test ends.
func newSandbox(t *testing.T, args ...string) string {
	t.Helper()
	r := execfarm(t, append([]string{"sandbox", "create"}, args...)...)
	if r.code != 0 {
		t.Fatalf("sandbox create: exit %d, %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { execfarm(t, "sandbox", "rm", id) })
	return id
}

// TestSandboxExtend: `execfarm sandbox extend ID --ttl 600` (or 10m)
// moves the expiry to that long from now and prints it; past the
// server's lifetime ceiling (24 h) or for another's sandbox it is
// refused (exit 126) with the server's message; a bad --ttl is refused
// before any call.
func TestSandboxExtend(t *testing.T) {
	requireServe(t)
	id := newSandbox(t, "--ttl", "1m")
	for _, ttl := range []string{"600", "10m"} {
		before := time.Now()
		r := execfarm(t, "sandbox", "extend", id, "--ttl", ttl)
		if r.code != 0 || !strings.HasPrefix(r.stdout, id+" expires in ") {
			t.Fatalf("extend --ttl %s: exit %d, stdout %q, stderr %q", ttl, r.code, r.stdout, r.stderr)
		}
		f := strings.Fields(r.stdout)
		exp, err := time.Parse(time.RFC3339, strings.Trim(f[len(f)-1], "()"))
		if err != nil {
			t.Fatalf("extend printed %q: %v", r.stdout, err)
		}
		if d := exp.Sub(before); d < 599*time.Second || d > 602*time.Second {
			t.Errorf("extend --ttl %s: expires %v from now, want 10m", ttl, d)
		}
	}
	if st := execfarm(t, "sandbox", "status", id); !strings.Contains(st.stdout, "expires: in 9m") && !strings.Contains(st.stdout, "expires: in 10m") {
		t.Errorf("status after extend:\n%s", st.stdout)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "extend", id, "--ttl", "100000"}, "--sandbox-max-lifetime"},
		{[]string{"sandbox", "extend", id, "--ttl", "0"}, "--sandbox-max-lifetime"},
		{[]string{"sandbox", "extend", "sb-0000000000000000", "--ttl", "60"}, "not found"},
		{[]string{"sandbox", "extend", id, "--ttl", "-5"}, "must not be negative"},
		{[]string{"sandbox", "extend", id, "--ttl", "1.5s"}, "whole seconds"},
		{[]string{"sandbox", "extend", id}, `required flag(s) "ttl"`},
	} {
		r := execfarm(t, tt.args...)
		if r.code != 126 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("execfarm %q: exit %d, stderr %q; want 126 saying %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestMv: `execfarm mv ID SRC DST` renames inside the sandbox; an
// existing DST is refused without --force (exit 126, the server's
// message) and replaced with it; a missing SRC is refused.
func TestMv(t *testing.T) {
	requireServe(t)
	id := newSandbox(t)
	if r := execfarmIn(t, nil, "exec", id, "--socket", env.socket, "--", "echo one > a.txt; echo two > b.txt"); r.code != 0 {
		t.Fatalf("exec: exit %d, %s", r.code, r.stderr)
	}
	if r := execfarm(t, "mv", id, "a.txt", "/workspace/c.txt"); r.code != 0 || r.stdout != "" {
		t.Fatalf("mv: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := execfarm(t, "ls", id); !strings.Contains(r.stdout, " c.txt\n") || strings.Contains(r.stdout, " a.txt\n") {
		t.Errorf("ls after mv:\n%s", r.stdout)
	}
	r := execfarm(t, "mv", id, "c.txt", "b.txt")
	if r.code != 126 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("mv onto an existing file: exit %d, stderr %q; want 126 saying it exists", r.code, r.stderr)
	}
	if r := execfarm(t, "mv", "-f", id, "c.txt", "b.txt"); r.code != 0 {
		t.Fatalf("mv -f: exit %d, %s", r.code, r.stderr)
	}
	if r := execfarm(t, "cp", id+":b.txt", "-"); r.stdout != "one\n" {
		t.Errorf("b.txt after mv -f: %q (%s)", r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"mv", id, "nope", "x"}, {"mv", id, "b.txt"}, {"mv", id, "/", "x"}} {
		if r := execfarm(t, args...); r.code != 126 {
			t.Errorf("execfarm %q: exit %d, stderr %q; want 126", args, r.code, r.stderr)
		}
	}
}
