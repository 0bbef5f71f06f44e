//go:build linux

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// loweredNofile returns argv running the CLI with args under a hard
// RLIMIT_NOFILE of 20000, below the file descriptor ceiling (65536), and
// with nothing at the default socket (withoutDefaultSocket), so that run
// starts an embedded supervisor.
func loweredNofile(t *testing.T, args ...string) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	return append([]string{unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs /run && ulimit -S -n 1024 && ulimit -H -n 20000 && exec "$@"`, "sh", filepath.Join(env.bin, "execfarm")}, args...)
}

// TestCeilingNoteWhereItMatters: a supervisor whose hard RLIMIT_NOFILE is
// below the file descriptor ceiling says it lowered the ceiling in
// doctor, at serve's start, with run -v and at EXECFARM_LOG_LEVEL=debug,
// not on every run with an embedded supervisor. A red-team pass found
// the [WARN] line the first thing a new user saw on every run.
func TestCeilingNoteWhereItMatters(t *testing.T) {
	requireServe(t)
	const note = "file descriptor ceiling lowered"
	r := runRaw(t, nil, loweredNofile(t, "run", "--runtime", "shell", "-e", "echo hi")...)
	if r.code != 0 || r.stdout != "hi\n" || strings.Contains(r.stderr, note) {
		t.Errorf("run with an embedded supervisor: exit %d, stdout %q, stderr %q; want hi and no note", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"run -v", nil, []string{"run", "-v", "--runtime", "shell", "-e", "echo hi"}},
		{"EXECFARM_LOG_LEVEL=debug run", []string{"EXECFARM_LOG_LEVEL=debug"}, []string{"run", "--runtime", "shell", "-e", "echo hi"}},
		{"doctor", nil, []string{"doctor", "--cgroup-parent", fmt.Sprintf("/execfarm-cli-doctor-%d", os.Getpid())}},
	} {
		r := runRaw(t, tc.env, loweredNofile(t, tc.args...)...)
		if !strings.Contains(r.stdout+r.stderr, note+" to the supervisor's hard RLIMIT_NOFILE") || !strings.Contains(r.stdout+r.stderr, "20000") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the note naming the rlimit 20000", tc.name, r.code, r.stdout, r.stderr)
		}
	}
	// The suite's serve runs with this process's limits.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 65536 && !strings.Contains(env.serve.Log(0), note) {
		t.Errorf("serve with a hard RLIMIT_NOFILE of %d: its start does not say %q", lim.Max, note)
	}
}
