package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

func TestParseCopyArg(t *testing.T) {
	for _, tt := range []struct {
		in            string
		sandbox, path string
	}{
		{"sb_1:/etc/x", "sb_1", "/etc/x"},
		{"node-a_0a1b2c3d_00ff:rel/file", "node-a_0a1b2c3d_00ff", "rel/file"},
		{"sb:", "sb", ""},
		{"local.txt", "", "local.txt"},
		{"./a:b", "", "./a:b"},
		{"/tmp/a:b", "", "/tmp/a:b"},
		{":x", "", ":x"},
		{"-", "", "-"},
	} {
		got := parseCopyArg(tt.in)
		if got.sandbox != tt.sandbox || got.path != tt.path {
			t.Errorf("parseCopyArg(%q) = %+v, want {%q %q}", tt.in, got, tt.sandbox, tt.path)
		}
	}
}

// TestCommandLine: several words for the shell are quoted so that
// /bin/sh sees exactly them (checked with the host's sh); one word is a
// command line as it is; other runtimes get the words joined.
func TestCommandLine(t *testing.T) {
	words := []string{"printf", `%s|`, "a b", "it's", `$HOME`, "*", "", `back\slash`, "new\nline"}
	line := commandLine(sandboxv1.Runtime_RUNTIME_SHELL, words)
	out, err := exec.Command("/bin/sh", "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	if want := strings.Join(words[2:], "|") + "|"; string(out) != want {
		t.Fatalf("sh -c %q printed %q, want %q", line, out, want)
	}
	if got := commandLine(sandboxv1.Runtime_RUNTIME_UNSPECIFIED, []string{"echo $HOME | wc -c"}); got != "echo $HOME | wc -c" {
		t.Errorf("one word: %q", got)
	}
	if got := commandLine(sandboxv1.Runtime_RUNTIME_PYTHON, []string{"print(1);", "print(2)"}); got != "print(1); print(2)" {
		t.Errorf("python: %q", got)
	}
}

func TestLimitFlags(t *testing.T) {
	parse := func(args ...string) (*sandboxv1.ResourceLimits, error) {
		var l limitFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		l.register(fs, "it")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return l.proto()
	}
	got, err := parse()
	if err != nil || got != nil {
		t.Fatalf("no flags: %v, %v; want nil", got, err)
	}
	got, err = parse("--memory", "256Mi", "--cpus", "0.5", "--pids", "64", "--open-files", "100", "--output-limit", "1M",
		"--timeout", "1m30s", "--cpu-time", "2s", "--workspace", "1Gi")
	if err != nil {
		t.Fatal(err)
	}
	want := &sandboxv1.ResourceLimits{MaxMemoryBytes: 256 << 20, MaxCpuPercent: 50, MaxProcesses: 64, MaxFileDescriptors: 100,
		MaxOutputBytes: 1_000_000, TimeoutMs: 90_000, CpuTimeMs: 2000, WorkspaceBytes: 1 << 30}
	if got.String() != want.String() {
		t.Fatalf("limits %v, want %v", got, want)
	}
	if got, err = parse("--fds", "100"); err != nil || got.GetMaxFileDescriptors() != 100 {
		t.Fatalf("--fds 100: %v, %v; want the same as --open-files 100", got, err)
	}
	if got, err := parse("--memory", "268435456", "--cpus", "2"); err != nil || got.GetMaxMemoryBytes() != 256<<20 || got.GetMaxCpuPercent() != 200 {
		t.Fatalf("plain numbers: %v, %v", got, err)
	}
	for _, bad := range [][]string{
		{"--memory", "lots"}, {"--memory", "-1Mi"}, {"--memory", "0"}, {"--cpus", "0"}, {"--cpus", "0.001"}, {"--cpus", "0.05"},
		{"--pids", "-1"}, {"--timeout", "-1s"}, {"--timeout", "10us"}, {"--workspace", "10E"},
	} {
		if got, err := parse(bad...); err == nil {
			t.Errorf("%v accepted: %v", bad, got)
		}
	}
	// A refusal names the value as given and the accepted range, the
	// server's minimum (it once said 0.01, and the server then refused
	// 0.01) and its default ceiling; never "at least" for a value too
	// large, nor a Go function.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpus", "0.05"}, "--cpus 0.05: want a number of cores from 0.1 to the server's ceiling (8 unless configured)"},
		{[]string{"--cpus", "1e9"}, "--cpus 1e9: want a number of cores from 0.1 to the server's ceiling (8 unless configured)"},
		{[]string{"--cpus", "1e30"}, "--cpus 1e30: want a number of cores from 0.1"},
		{[]string{"--pids", "1e9"}, `"1e9" for "--pids" flag: want a whole number from 8 to the server's ceiling (4096 unless configured)`},
		{[]string{"--pids", "99999999999"}, `"99999999999" for "--pids" flag: want a whole number from 8`},
		{[]string{"--open-files", "-1"}, `"-1" for "--open-files" flag: want a whole number from 64 to the server's ceiling (65536 unless configured)`},
		{[]string{"--memory", "1e30"}, "--memory 1e30: want an amount of bytes from 1 to the server's ceiling (8Gi unless configured)"},
		{[]string{"--workspace", "10E"}, "--workspace 10E: want an amount of bytes from 1 to the server's ceiling (2Gi unless configured)"},
		{[]string{"--output-limit", "0"}, "--output-limit 0: want an amount of bytes from 1 to the server's ceiling (64Mi unless configured)"},
	} {
		_, err := parse(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("%v: %v; want %q", tt.args, err, tt.want)
		}
	}
	if got, err := parse("--cpus", "0.1"); err != nil || got.GetMaxCpuPercent() != 10 {
		t.Errorf("--cpus 0.1: %v, %v; want 10 percent", got, err)
	}
}

func TestExecExit(t *testing.T) {
	res := func(st sandboxv1.ExecutionState, r sandboxv1.TerminationReason, code, sig int32) *sandboxv1.ExecuteResult {
		return &sandboxv1.ExecuteResult{State: st, Outcome: &sandboxv1.ExecutionOutcome{TerminationReason: r, ExitCode: code, Signal: sig},
			Success: st == sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED && code == 0 && sig == 0}
	}
	// What the server answers for `seq 1 400000` past a 1 MiB limit:
	// completed, exit code 0, success false.
	truncated := &sandboxv1.ExecuteResult{State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED,
		Outcome: &sandboxv1.ExecutionOutcome{TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, StdoutTruncated: true}}
	for _, tt := range []struct {
		name string
		res  *sandboxv1.ExecuteResult
		want int // 0 = nil error
	}{
		{"success", res(sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED, sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, 0, 0), 0},
		{"exit 3", res(sandboxv1.ExecutionState_EXECUTION_STATE_FAILED, sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, 3, 0), 3},
		{"SIGSEGV", res(sandboxv1.ExecutionState_EXECUTION_STATE_FAILED, sandboxv1.TerminationReason_TERMINATION_REASON_SIGNAL, -1, 11), 139},
		{"timeout", res(sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT, sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT, -1, 9), exitTimeout},
		{"OOM kill", res(sandboxv1.ExecutionState_EXECUTION_STATE_FAILED, sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY, -1, 9), exitLimit},
		{"output truncated", truncated, exitLimit},
	} {
		err := execExit(tt.res)
		var ee exitError
		switch {
		case tt.want == 0 && err != nil, tt.want != 0 && (!errors.As(err, &ee) || ee.code != tt.want):
			t.Errorf("%s: %v, want exit %d", tt.name, err, tt.want)
		}
	}
}

func TestModeText(t *testing.T) {
	for _, tt := range []struct {
		info *execfarmv1.FileInfo
		want string
	}{
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_FILE, Mode: 0o644}, "-rw-r--r--"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_DIRECTORY, Mode: 0o755}, "drwxr-xr-x"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_SYMLINK, Mode: 0o777}, "lrwxrwxrwx"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_DIRECTORY, Mode: 0o1777}, "drwxrwxrwt"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_FILE, Mode: 0o4755}, "-rwsr-xr-x"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_FILE, Mode: 0o2640}, "-rw-r-S---"},
		{&execfarmv1.FileInfo{Type: execfarmv1.FileType_FILE_TYPE_OTHER, Mode: 0o600}, "?rw-------"},
	} {
		if got := modeText(tt.info); got != tt.want {
			t.Errorf("modeText(%v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}

// TestProgressOnATerminal: a transfer of 4 MiB or more draws a bar (its
// description, the bytes moved) on a terminal (a pty here), and nothing
// on a pipe or for a small transfer.
func TestProgressOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	drawn := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // until tty is closed
		drawn <- string(b)
	}()
	w, done := progress(tty, 8<<20, "upload")
	if w == io.Discard {
		t.Fatal("no bar on a terminal")
	}
	chunk := make([]byte, 1<<20)
	for range 8 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	done()
	if w, _ := progress(tty, 1<<20, "upload"); w != io.Discard {
		t.Error("a bar for 1 MiB")
	}
	tty.Close()
	out := <-drawn
	if !strings.Contains(out, "upload") || !strings.Contains(out, "8.4 MB") {
		t.Fatalf("the terminal shows %q; want the bar with upload and 8.4 MB", out)
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	if w, _ := progress(pw, 8<<20, "upload"); w != io.Discard {
		t.Error("a bar on a pipe")
	}
}

// TestSessionCallUnreachable: a session command (sandbox ls, create,
// exec...) that finds no supervisor fails as run does: an
// *unreachableError (exit 127) whose message says how to start one or
// point at one, not a bare UNAVAILABLE.
func TestSessionCallUnreachable(t *testing.T) {
	cf := &clientFlags{socket: filepath.Join(t.TempDir(), "none.sock")}
	err := cf.sessionCall(func(c sessionClients) error {
		_, err := c.sessions.ListSandboxes(t.Context(), &execfarmv1.ListSandboxesRequest{})
		return err
	})
	var un *unreachableError
	if !errors.As(err, &un) || exitForError(err) != exitUnreachable {
		t.Fatalf("sessionCall without a supervisor = %v (exit %d), want an *unreachableError (exit %d)", err, exitForError(err), exitUnreachable)
	}
	for _, s := range []string{"execfarm serve", "--socket PATH"} {
		if !strings.Contains(describe(err), s) {
			t.Errorf("message %q lacks the hint %q", describe(err), s)
		}
	}
}

// prunedLog is a SessionService client whose sandbox's event log holds
// offsets 5 to 7 (0 to 4 pruned), read as the server reads it: from 0,
// from the oldest held.
type prunedLog struct {
	execfarmv1.SessionServiceClient // nil: only ReadEvents is called
}

func (prunedLog) ReadEvents(_ context.Context, req *execfarmv1.ReadEventsRequest, _ ...grpc.CallOption) (*execfarmv1.ReadEventsResponse, error) {
	const first, next = 5, 8
	from := req.GetFromOffset()
	if from == 0 {
		from = first
	}
	resp := &execfarmv1.ReadEventsResponse{FirstOffset: first, NextOffset: from}
	for off := from; off < next; off++ {
		resp.Events = append(resp.Events, &execfarmv1.SandboxEvent{Offset: off, Event: &execfarmv1.SandboxEvent_Ready{}})
		resp.NextOffset = off + 1
	}
	return resp, nil
}

// TestPrintEventsPruned: events from 0 of a log whose oldest events were
// pruned prints the events held and says once, on stderr, which were
// pruned; from an offset held it says nothing.
func TestPrintEventsPruned(t *testing.T) {
	for _, tc := range []struct {
		from       int64
		lines      int
		wantStderr string
	}{
		{0, 3, "execfarm: events 0 to 4 were pruned (the log keeps its newest events); from 5 on:\n"},
		{6, 2, ""},
	} {
		var stdout, stderr strings.Builder
		if err := printEvents(t.Context(), prunedLog{}, "sb", tc.from, false, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(stdout.String(), "\tready"); n != tc.lines || stderr.String() != tc.wantStderr {
			t.Errorf("from %d: %d events, stderr %q; want %d, %q", tc.from, n, stderr.String(), tc.lines, tc.wantStderr)
		}
	}
}

// TestSandboxCreateDurations: a negative --ttl or --idle-timeout is
// refused as negative, a fraction of a second as not whole, before any
// call.
func TestSandboxCreateDurations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--idle-timeout", "-1s"}, "--idle-timeout -1s: must not be negative"},
		{[]string{"--ttl", "-5m"}, "--ttl -5m0s: must not be negative"},
		{[]string{"--idle-timeout", "1500ms"}, "--idle-timeout 1.5s: want whole seconds"},
		{[]string{"--ttl", "1500ms"}, "--ttl 1.5s: want whole seconds, 0 for no expiry"},
	} {
		cmd := sandboxCreateCmd(&clientFlags{socket: filepath.Join(t.TempDir(), "none.sock")})
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err == nil || err.Error() != tc.want {
			t.Errorf("sandbox create %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestTimeoutFlags: --timeout and --cpu-time of run, test and sandbox
// create (limitFlags) and exec's --timeout keep one rule, the API's for
// timeout_ms and cpu_time_ms: 0 is the default; else whole milliseconds
// from the minimum, and a refusal names the minimum. exec once rounded
// 500us up to 1ms where run refused it.
func TestTimeoutFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = accepted
		ms   int64
	}{
		{[]string{"--timeout", "0s"}, "", 0},
		{[]string{"--timeout", "1ms"}, "", 1},
		{[]string{"--timeout", "500us"}, "--timeout 500µs: below the minimum 1ms (0 is the default)", 0},
		{[]string{"--timeout", "1500us"}, "--timeout 1.5ms: want whole milliseconds", 0},
		{[]string{"--timeout", "-1s"}, "--timeout -1s: must not be negative (at least 1ms, or 0 for the default)", 0},
		{[]string{"--cpu-time", "50ms"}, "--cpu-time 50ms: below the minimum 100ms (0 is the default)", 0},
	} {
		var l limitFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		l.register(fs, "it")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := l.proto()
		switch {
		case tc.want == "" && (err != nil || got.GetTimeoutMs() != tc.ms):
			t.Errorf("run %q: %v, %v; want timeout_ms %d", tc.args, got, err, tc.ms)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("run %q: %v, want %q", tc.args, err, tc.want)
		}
		if tc.args[0] != "--timeout" || tc.want == "" {
			continue
		}
		cmd := execCmd(&clientFlags{socket: filepath.Join(t.TempDir(), "none.sock")})
		cmd.SetArgs(append([]string{"sb"}, append(tc.args, "--", "true")...))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err == nil || err.Error() != tc.want {
			t.Errorf("exec %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
