//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/deterministic/detertest"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/test/testbin"
)

func TestMain(m *testing.M) { leakcheck.Main(suite{m}) }

// suite builds the binaries and starts one `execfarm serve` (JSON logs)
// around the tests, and stops it after: TestServeLog reads its log.
type suite struct{ m *testing.M }

var env struct {
	bin     string // directory of execfarm, execfarm-worker, execfarm-goja
	dir     string // the server's directory
	socket  string
	uidBase uint64 // the server's first host uid
	serve   *testbin.Serve
	skip    string
	failure error
}

func (s suite) Run() int {
	teardown := setup()
	code := s.m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "cli: teardown:", err)
		code = 1
	}
	return code
}

// The server's uid window: 3<<30 + 2<<28 + 1<<27 and up (the prodisco
// suite's is below), placed by the test process's pid.
const (
	rangeSize  = 65536
	serveSlots = 12 // --max-concurrent 2 --max-sandboxes 2: 2 + 2 + 8 ranges
)

func setup() (teardown func() error) {
	teardown = func() error { return nil }
	if os.Geteuid() != 0 {
		env.skip = "needs root: the supervisor creates namespaces and cgroups"
		return teardown
	}
	var err error
	if env.bin, err = os.MkdirTemp("", "efcli-bin-"); err != nil {
		env.failure = err
		return teardown
	}
	if env.dir, err = os.MkdirTemp("", "efcli-"); err != nil {
		env.failure = err
		return teardown
	}
	teardown = func() error {
		var err error
		if env.serve != nil {
			err = env.serve.Stop(30 * time.Second)
		}
		os.RemoveAll(env.bin)
		os.RemoveAll(env.dir)
		return err
	}
	if err := os.Chmod(env.dir, 0o755); err != nil {
		env.failure = err
		return teardown
	}
	if err := testbin.Build(env.bin, append([]string{"execfarm"}, testbin.Sandbox...)...); err != nil {
		env.failure = err
		return teardown
	}
	bundle, err := filepath.Abs("../../runtime/node/bundle")
	if err != nil {
		env.failure = err
		return teardown
	}
	if _, err := os.Stat(filepath.Join(bundle, "node_modules")); err != nil {
		env.failure = fmt.Errorf("node runtime bundle missing (make bundle): %w", err)
		return teardown
	}
	env.socket = filepath.Join(env.dir, "s.sock")
	env.uidBase = 3<<30 + 2<<28 + 1<<27 + uint64(os.Getpid()%64)*serveSlots*rangeSize
	uidBase := env.uidBase
	env.serve, err = testbin.StartServe(filepath.Join(env.bin, "execfarm"), "serve",
		"--socket", env.socket, "--state-dir", filepath.Join(env.dir, "state"),
		"--cgroup-parent", fmt.Sprintf("/execfarm-cli-%d", os.Getpid()), "--uid-base", strconv.FormatUint(uidBase, 10),
		"--max-concurrent", "2", "--max-sandboxes", "2", "--scripts-cache-dir", filepath.Join(env.dir, "scripts"),
		"--grace", "2s", "--log-format", "json", "--node-bundle", bundle)
	if err != nil {
		env.failure = err
		return teardown
	}
	// serve logs "serving" once it listens.
	if err := env.serve.WaitLog(context.Background(), `"serving"`, time.Minute); err != nil {
		env.failure = err
	}
	return teardown
}

// requireServe skips without root and fails when the suite's server did
// not start.
func requireServe(t *testing.T) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	if env.failure != nil {
		t.Fatalf("cli: set-up: %v", env.failure)
	}
}

// result is one run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

// execfarm runs the CLI with args, pointed at the suite's server unless
// args name another (--socket), and returns what it printed and its exit
// status.
func execfarm(t *testing.T, args ...string) result {
	t.Helper()
	return execfarmIn(t, nil, append(args, "--socket", env.socket)...)
}

// execfarmIn runs the CLI with args and extra environment, as they are.
func execfarmIn(t *testing.T, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.bin, "execfarm"), args...)
	cmd.Env = append(cleanEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("execfarm %q: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// cleanEnv is the test's environment without the variables that point
// the CLI at a supervisor.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SANDBOX_") && !strings.HasPrefix(kv, "EXECFARM_") {
			out = append(out, kv)
		}
	}
	return out
}

// withoutDefaultSocket returns args that run the CLI with nothing at the
// default socket: in a mount namespace of its own whose /run is an empty
// tmpfs, so that a supervisor serving on this host is not found.
func withoutDefaultSocket(t *testing.T, args ...string) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	return append([]string{unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs /run && exec "$@"`, "sh", filepath.Join(env.bin, "execfarm")}, args...)
}

// runRaw runs argv (a full command line) with extra environment.
func runRaw(t *testing.T, extraEnv []string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(cleanEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%q: %v", argv, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// TestExitCodes: every exit status `execfarm --help` documents, produced.
func TestExitCodes(t *testing.T) {
	requireServe(t)
	tests := dir(t)
	failing := filepath.Join(tests, "fails.test.ts")
	if err := os.WriteFile(failing, []byte(`test("one", () => assert.is(1, 2));`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		run  func(t *testing.T) result
		code int
		says string // in stderr
	}{
		{"success", func(t *testing.T) result { return execfarm(t, "run", "-e", "console.log(1)") }, 0, ""},
		{"the program's own code", func(t *testing.T) result { return execfarm(t, "run", "--runtime", "shell", "-e", "exit 3") }, 3, ""},
		{"a test failed", func(t *testing.T) result { return execfarm(t, "test", failing) }, 1, ""},
		{"timeout", func(t *testing.T) result { return execfarm(t, "run", "--timeout", "1s", "-e", "while (true) {}") }, 124, "Script execution timed out"},
		{"execfarm failed", func(t *testing.T) result {
			// No supervisor configured nor at the default socket: run
			// starts an embedded one, which cannot find its worker.
			return runRaw(t, []string{"EXECFARM_WORKER=/nonexistent/execfarm-worker"}, withoutDefaultSocket(t, "run", "-e", "1")...)
		}, 125, "worker"},
		{"refused request", func(t *testing.T) result { return execfarm(t, "run", "-e", "const x = ;") }, 126, "INVALID_ARGUMENT"},
		{"refused command line", func(t *testing.T) result { return execfarm(t, "run", "--timeout", "5", "-e", "1") }, 126, "missing unit"},
		{"unknown cache command", func(t *testing.T) result { return execfarm(t, "cache", "nope") }, 126, "nope"},
		{"no supervisor", func(t *testing.T) result {
			return execfarmIn(t, nil, "ps", "--socket", filepath.Join(tests, "none.sock"))
		}, 127, "execfarm serve"},
		{"cancelled", func(t *testing.T) result {
			a := execfarm(t, "run", "--async", "-e", "await new Promise(r => setTimeout(r, 60000))")
			id := strings.TrimSpace(a.stdout)
			if a.code != 0 || id == "" {
				t.Fatalf("run --async: %+v", a)
			}
			if c := execfarm(t, "cancel", id); c.code != 0 {
				t.Fatalf("cancel: %+v", c)
			}
			return execfarm(t, "status", "--wait", id)
		}, 130, ""},
		{"limit", func(t *testing.T) result {
			return execfarm(t, "run", "--runtime", "shell", "--cpu-time", "200ms", "-e", "while :; do :; done")
		}, 137, "CPU time"},
		{"signal", func(t *testing.T) result { return execfarm(t, "run", "--runtime", "shell", "-e", "kill -TERM $$") }, 128 + int(syscall.SIGTERM), ""},
		{"reader gone", func(t *testing.T) result {
			return closedReader(t, "run", "--runtime", "shell", "-e", "yes", "--socket", env.socket)
		}, 141, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.run(t)
			if r.code != c.code || !strings.Contains(r.stderr, c.says) {
				t.Fatalf("exit %d, stderr %q; want %d and %q (stdout %q)", r.code, r.stderr, c.code, c.says, r.stdout)
			}
		})
	}
}

// closedReader runs the CLI with a stdout whose reader closes after the
// first line.
func closedReader(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.bin, "execfarm"), args...)
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "y\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	out.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return result{"", stderr.String(), cmd.ProcessState.ExitCode()}
}

// dir returns a temporary directory that the sandbox's files need not see.
func dir(t *testing.T) string { return t.TempDir() }

// jsonOf decodes a command's JSON output, failing the test when it is
// not valid JSON.
func jsonOf(t *testing.T, r result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("output is not JSON (%v), exit %d:\n%s\nstderr: %s", err, r.code, r.stdout, r.stderr)
	}
	return m
}

// field walks m by keys.
func field(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// TestOutputFormats: -o json gives the API's JSON form, -o yaml the same
// document, on every client command that takes it.
func TestOutputFormats(t *testing.T) {
	requireServe(t)
	run := execfarm(t, "run", "-o", "json", "-e", "console.log(1)")
	m := jsonOf(t, run)
	if run.code != 0 || field(m, "success") != true || field(m, "output") != "1\n" || field(m, "state") != "EXECUTION_STATE_COMPLETED" {
		t.Errorf("run -o json: exit %d, %v", run.code, m)
	}
	id, _ := field(m, "outcome", "executionId").(string)
	if id == "" {
		t.Fatalf("run -o json: no outcome.executionId in %v", m)
	}
	if ps := jsonOf(t, execfarm(t, "ps", "-a", "-o", "json")); field(ps, "executions") == nil {
		t.Errorf("ps -o json: %v", ps)
	}
	if st := jsonOf(t, execfarm(t, "status", id, "-o", "json")); field(st, "result", "success") != true || field(st, "output") != "1\n" {
		t.Errorf("status -o json: %v", st)
	}
	if h := jsonOf(t, execfarm(t, "health", "-o", "json")); field(h, "healthy") != true || field(h, "layers") == nil {
		t.Errorf("health -o json: %v", h)
	}
	if c := jsonOf(t, execfarm(t, "cache", "list", "-o", "json")); field(c, "entries") == nil {
		t.Errorf("cache list -o json: %v (every field is present, an empty list too)", c)
	}
	if d := jsonOf(t, execfarmIn(t, nil, "doctor", "-o", "json", "--cgroup-parent", fmt.Sprintf("/execfarm-cli-doctor-%d", os.Getpid()))); field(d, "layers") == nil || field(d, "canStart") == nil {
		t.Errorf("doctor -o json: %v", d)
	}
	y := execfarm(t, "run", "-o", "yaml", "-e", "console.log(2)")
	var ym map[string]any
	if err := yaml.Unmarshal([]byte(y.stdout), &ym); err != nil || ym["output"] != "2\n" || ym["success"] != true {
		t.Errorf("run -o yaml: %v %v:\n%s", ym, err, y.stdout)
	}
}

// TestOutputBeyondOnePage: run -o json prints both streams whole, not
// the first page (1 MiB) that Execute carries: 3 MiB of stdout and
// 1.5 MiB of stderr, each byte accounted.
func TestOutputBeyondOnePage(t *testing.T) {
	requireServe(t)
	const outBytes, errBytes = 3 << 20, 3 << 19
	r := execfarm(t, "run", "-o", "json", "--runtime", "shell", "--output-limit", "4Mi",
		"-e", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' o; head -c %d /dev/zero | tr '\\0' e >&2", outBytes, errBytes))
	m := jsonOf(t, r)
	out, _ := field(m, "output").(string)
	errOut, _ := field(m, "errorOutput").(string)
	if r.code != 0 || len(out) != outBytes || len(errOut) != errBytes ||
		strings.Trim(out, "o") != "" || strings.Trim(errOut, "e") != "" || field(m, "outputPartial") != false {
		t.Errorf("run -o json: exit %d, stdout %d bytes, stderr %d bytes (want %d and %d), outputPartial %v",
			r.code, len(out), len(errOut), outBytes, errBytes, field(m, "outputPartial"))
	}
}

// TestTruncatedOutput: run of a program whose stdout passes
// --output-limit (seq 1 3000, 13893 bytes, past 1 KiB) prints each kept
// byte once and in order, marks on stderr every run of bytes it never
// got, with its offsets, so that the marked gaps and the printed bytes
// rebuild the program's output exactly; it says the stream was
// truncated and exits 137 (the program exited 0). status of the same
// execution says so too, with the same exit status.
func TestTruncatedOutput(t *testing.T) {
	requireServe(t)
	var want strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	r := execfarm(t, "run", "--verbose", "--runtime", "shell", "--output-limit", "1Ki", "-e", "seq 1 3000")
	if r.code != 137 || !strings.Contains(r.stderr, "stdout truncated: of the 13893 bytes") {
		t.Fatalf("exit %d, stderr %q; want 137 and the truncation said", r.code, r.stderr)
	}
	checkMarkedGaps(t, "run", r, want.String())
	id := regexp.MustCompile(`execution (\S+) completed`).FindStringSubmatch(r.stderr)
	if id == nil {
		t.Fatalf("no execution id in --verbose's %q", r.stderr)
	}
	// status reads the kept output by GetExecution pages, which say where
	// the dropped middle lies.
	st := execfarm(t, "status", id[1])
	if st.code != 137 || !strings.Contains(st.stderr, "stdout truncated") {
		t.Errorf("status %s: exit %d, stderr %q; want 137 and the truncation said", id[1], st.code, st.stderr)
	}
	checkMarkedGaps(t, "status", st, want.String())
}

// checkMarkedGaps checks that r printed want's kept bytes on stdout with
// each gap marked on stderr at its place: the printed bytes with the
// marked ones put back are want, with at least one gap.
func checkMarkedGaps(t *testing.T, cmd string, r result, want string) {
	t.Helper()
	marker := regexp.MustCompile(`execfarm: stdout: (\d+) bytes dropped here \(offsets (\d+) to (\d+);`)
	var rebuilt strings.Builder
	printed, at := r.stdout, int64(0)
	for _, m := range marker.FindAllStringSubmatch(r.stderr, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		from, _ := strconv.ParseInt(m[2], 10, 64)
		to, _ := strconv.ParseInt(m[3], 10, 64)
		if n != to-from || from < at || from-at > int64(len(printed)) || to > int64(len(want)) {
			t.Fatalf("%s: marker %q after offset %d (%d bytes printed)", cmd, m[0], at, len(r.stdout))
		}
		// The bytes printed before this gap, then the gap.
		rebuilt.WriteString(printed[:from-at])
		printed = printed[from-at:]
		rebuilt.WriteString(want[from:to])
		at = to
	}
	rebuilt.WriteString(printed)
	if at == 0 {
		t.Errorf("%s: no gap marked; stderr %q", cmd, r.stderr)
	}
	if rebuilt.String() != want || !strings.HasPrefix(r.stdout, want[:512]) || !strings.HasSuffix(r.stdout, "2999\n3000\n") {
		t.Errorf("%s: stdout %q with the marked gaps is not seq's output (stderr %q)", cmd, r.stdout, r.stderr)
	}
}

// TestLimitFlags: run's limit flags take units and reach the execution:
// its result's effective limits are the flags'. Bad values are refused
// before anything is sent.
func TestLimitFlags(t *testing.T) {
	requireServe(t)
	r := execfarm(t, "run", "-o", "json", "--memory", "64Mi", "--timeout", "2s", "--cpus", "0.5", "--pids", "32",
		"--cpu-time", "1500ms", "--output-limit", "2Mi", "--fds", "100", "--workspace", "16Mi", "-e", "1")
	m := jsonOf(t, r)
	want := map[string]any{
		// protojson writes 64-bit integers as strings.
		"maxMemoryBytes": "67108864", "timeoutMs": "2000", "maxCpuPercent": float64(50), "maxProcesses": float64(32),
		"cpuTimeMs": "1500", "maxOutputBytes": "2097152", "maxFileDescriptors": float64(100), "workspaceBytes": "16777216",
	}
	for k, v := range want {
		if got := field(m, "outcome", "effectiveLimits", k); got != v {
			t.Errorf("effective %s = %v (%T), want %v", k, got, got, v)
		}
	}
	for _, bad := range [][]string{{"--memory", "lots"}, {"--timeout", "5"}, {"--cpus", "-1"}, {"--output-limit", "-1Mi"}, {"--env", "NOEQUALS"}} {
		if r := execfarm(t, append([]string{"run", "-e", "1"}, bad...)...); r.code != 126 {
			t.Errorf("run %q: exit %d, want 126: %s", bad, r.code, r.stderr)
		}
	}
	env := execfarm(t, "run", "--runtime", "shell", "--env", "GREETING=hi there", "-e", `echo "$GREETING"`)
	if env.code != 0 || env.stdout != "hi there\n" {
		t.Errorf("--env: %+v", env)
	}
}

// TestDeterministicRun: run --deterministic --seed N prints the same on
// two runs with one seed and other values with another, in goja and in
// node alike (detertest's program: Date.now(), new Date().toISOString(),
// three Math.random() values, timers), and the result says it ran
// deterministically, with its seed.
func TestDeterministicRun(t *testing.T) {
	requireServe(t)
	for _, rt := range []string{"goja", "node"} {
		t.Run(rt, func(t *testing.T) {
			for _, seed := range []int64{1, 1, 2} {
				r := execfarm(t, "run", "-o", "json", "--runtime", rt, "--deterministic", "--seed", strconv.FormatInt(seed, 10), "-e", detertest.Program)
				m := jsonOf(t, r)
				if r.code != 0 || field(m, "output") != detertest.Want(seed) {
					t.Errorf("seed %d: exit %d, output %q, want %q", seed, r.code, field(m, "output"), detertest.Want(seed))
				}
				if field(m, "outcome", "deterministic") != true || field(m, "outcome", "seed") != strconv.FormatInt(seed, 10) {
					t.Errorf("seed %d: outcome %v does not say deterministic, seed %d", seed, field(m, "outcome"), seed)
				}
			}
		})
	}
	if r := execfarm(t, "run", "--seed", "1", "-e", "1"); r.code != 126 || !strings.Contains(r.stderr, "--deterministic") {
		t.Errorf("--seed alone: exit %d, %q; want 126, refused", r.code, r.stderr)
	}
	if r := execfarm(t, "run", "--runtime", "shell", "--deterministic", "-e", "date"); r.code != 126 || !strings.Contains(r.stderr, "goja or node") {
		t.Errorf("--deterministic with shell: exit %d, %q; want 126, refused", r.code, r.stderr)
	}
}

// TestCachedFlag: run --cached runs a script the cache saved.
func TestCachedFlag(t *testing.T) {
	requireServe(t)
	first := jsonOf(t, execfarm(t, "run", "-o", "json", "-e", "// cli cached flag test\nconsole.log('from the cache')"))
	name, _ := field(first, "cached", "name").(string)
	if name == "" {
		t.Fatalf("first run cached nothing: %v", first)
	}
	r := execfarm(t, "run", "--cached", name)
	if r.code != 0 || r.stdout != "from the cache\n" {
		t.Fatalf("run --cached %s: %+v", name, r)
	}
}

// TestVersion: version prints the client's version and the server's, and
// exits 0 when no server answers, saying so.
func TestVersion(t *testing.T) {
	requireServe(t)
	r := execfarm(t, "version")
	if r.code != 0 || !strings.Contains(r.stdout, "client: dev\n") || !strings.Contains(r.stdout, "server: dev\n") {
		t.Errorf("version: %+v", r)
	}
	m := jsonOf(t, execfarm(t, "version", "-o", "json"))
	if m["client"] != "dev" || m["server"] != "dev" {
		t.Errorf("version -o json: %v", m)
	}
	none := execfarmIn(t, nil, "version", "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if none.code != 0 || !strings.Contains(none.stdout, "server: unreachable") {
		t.Errorf("version without a server: %+v", none)
	}
}

// TestHints: with no supervisor, client commands say how to start or
// find one; run --async refuses rather than start an embedded one.
func TestHints(t *testing.T) {
	requireServe(t)
	none := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"ps"}, {"sandbox", "ls"}, {"sandbox", "create"}} {
		r := execfarmIn(t, nil, append(args, "--socket", none)...)
		if r.code != 127 {
			t.Errorf("%q without a server: exit %d, want 127", args, r.code)
		}
		for _, s := range []string{"no supervisor answers", "execfarm serve", "SANDBOX_SOCKET_PATH", "--tcp"} {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%q without a server: stderr lacks %q:\n%s", args, s, r.stderr)
			}
		}
	}
	a := runRaw(t, nil, withoutDefaultSocket(t, "run", "--async", "-e", "1")...)
	if a.code != 127 || !strings.Contains(a.stderr, "--async needs a running supervisor") || !strings.Contains(a.stderr, "execfarm serve") {
		t.Errorf("run --async without a server: %+v", a)
	}
}

// TestStatusWaitPrintsTheStateOnce: status --wait of an ended execution
// says how it ended once.
func TestStatusWaitPrintsTheStateOnce(t *testing.T) {
	requireServe(t)
	a := execfarm(t, "run", "--async", "-e", "console.log(1)")
	id := strings.TrimSpace(a.stdout)
	r := execfarm(t, "status", "--wait", id)
	if r.code != 0 || strings.Count(r.stderr, "completed") != 1 {
		t.Errorf("status --wait: %+v", r)
	}
}

// TestServeHelp: serve --help names every runtime --default-runtime takes.
func TestServeHelp(t *testing.T) {
	requireServe(t)
	r := execfarmIn(t, nil, "serve", "--help")
	if !strings.Contains(r.stdout, "goja, node, shell, python") {
		t.Errorf("serve --help:\n%s", r.stdout)
	}
}

// TestServeLog: serve --log-format json logs its start-up configuration,
// one line per finished execution at info, and its shutdown, each a JSON
// object.
func TestServeLog(t *testing.T) {
	requireServe(t)
	dir, err := os.MkdirTemp("", "efcli-log-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	uidBase := 3<<30 + 2<<28 + 1<<27 + uint64(os.Getpid()%64+64)*serveSlots*rangeSize
	s, err := testbin.StartServe(filepath.Join(env.bin, "execfarm"), "serve",
		"--socket", sock, "--state-dir", filepath.Join(dir, "state"),
		"--cgroup-parent", fmt.Sprintf("/execfarm-cli-log-%d", os.Getpid()), "--uid-base", strconv.FormatUint(uidBase, 10),
		"--max-concurrent", "2", "--max-sandboxes", "2", "--scripts-cache-dir", filepath.Join(dir, "scripts"), "--grace", "2s", "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(30 * time.Second)
	if err := s.WaitLog(context.Background(), `"serving"`, time.Minute); err != nil {
		t.Fatal(err)
	}
	run := jsonOf(t, execfarmIn(t, nil, "run", "-o", "json", "--socket", sock, "--runtime", "shell", "-e", "exit 2"))
	id, _ := field(run, "outcome", "executionId").(string)
	if err := s.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.Log(4096))
	}
	lines := map[string][]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(s.Log(0)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		msg, _ := m["@message"].(string)
		lines[msg] = append(lines[msg], m)
	}
	start := lines["starting"]
	if len(start) != 1 || start[0]["max_concurrent"] != float64(2) || start[0]["state_dir"] != filepath.Join(dir, "state") {
		t.Errorf("start-up line: %v", start)
	}
	var finished map[string]any
	for _, m := range lines["execution finished"] {
		if m["id"] == id {
			finished = m
		}
	}
	if finished == nil || finished["@level"] != "info" || finished["runtime"] != "shell" || finished["state"] != "failed" ||
		finished["reason"] != "exited" || finished["exit_code"] != float64(2) || finished["wall_ms"] == nil || finished["queue_wait_ms"] == nil {
		t.Errorf("no info line for execution %s with runtime, state, reason, exit code, wall and queue wait: %v", id, lines["execution finished"])
	}
	if len(lines["shutting down"]) != 1 || len(lines["stopped"]) != 1 {
		t.Errorf("shutdown lines: %v, %v", lines["shutting down"], lines["stopped"])
	}
}

// TestSharedResourcesRefused: a second serve whose uid window overlaps the
// running one's (its --uid-base 65536 above, as in the report that found
// it), or that shares its script cache, refuses to start and names the
// first one's pid; nothing of the first is touched.
func TestSharedResourcesRefused(t *testing.T) {
	requireServe(t)
	for _, tc := range []struct {
		name  string
		flags func(dir string) []string
		says  string
	}{
		{"overlapping uid window", func(dir string) []string {
			return []string{"--uid-base", strconv.FormatUint(env.uidBase+rangeSize, 10), "--scripts-cache-dir", filepath.Join(dir, "scripts")}
		}, "overlaps uid window"},
		{"shared script cache", func(dir string) []string {
			return []string{"--uid-base", strconv.FormatUint(env.uidBase+64*serveSlots*rangeSize, 10), "--scripts-cache-dir", filepath.Join(env.dir, "scripts")}
		}, "script cache directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"serve", "--socket", filepath.Join(dir, "s.sock"), "--state-dir", filepath.Join(dir, "state"),
				"--cgroup-parent", fmt.Sprintf("/execfarm-cli-second-%d", os.Getpid()), "--max-concurrent", "2", "--max-sandboxes", "2"}, tc.flags(dir)...)
			r := execfarmIn(t, nil, args...)
			pid := "pid " + strconv.Itoa(env.serve.Pid())
			if r.code == 0 || !strings.Contains(r.stderr, tc.says) || !strings.Contains(r.stderr, pid) {
				t.Fatalf("second serve: exit %d, stderr %q; want refused, saying %q and naming %s", r.code, r.stderr, tc.says, pid)
			}
		})
	}
	if h := execfarm(t, "health"); h.code != 0 {
		t.Fatalf("the first serve after the refusals: %+v", h)
	}
}

// TestCodeInputIsBounded: a program or tests file, or standard input, over
// what one request carries (4 MiB less 64 KiB) is refused (126) naming the
// bound, after reading at most that much; so are a program and its
// --stdin together over it. A red-team pass found `run /dev/zero` at
// 1.7 GB after 20 s, and 200 MB piped to `run -` read whole and then
// refused by gRPC as "message larger than max".
func TestCodeInputIsBounded(t *testing.T) {
	requireServe(t)
	const bound = "is over 4128768 bytes"
	t.Run("pipe", func(t *testing.T) {
		r := runRaw(t, nil, "sh", "-c", `head -c 200M /dev/zero | "$0" run --runtime shell - --socket "$1"`, filepath.Join(env.bin, "execfarm"), env.socket)
		if r.code != 126 || !strings.Contains(r.stderr, "standard input "+bound) {
			t.Errorf("200 MB piped to run -: %+v, want 126 saying standard input %s", r, bound)
		}
	})
	t.Run("device", func(t *testing.T) {
		for _, args := range [][]string{{"run", "/dev/zero"}, {"test", "/dev/zero"}, {"test", "--code", "/dev/zero", "/dev/null"}} {
			if r := execfarm(t, args...); r.code != 126 || !strings.Contains(r.stderr, "/dev/zero "+bound) {
				t.Errorf("%q: %+v, want 126 saying /dev/zero %s", args, r, bound)
			}
		}
	})
	t.Run("with stdin", func(t *testing.T) {
		dir := t.TempDir()
		prog, in := filepath.Join(dir, "prog.sh"), filepath.Join(dir, "in")
		if err := os.WriteFile(prog, []byte(": "+strings.Repeat("x", 2<<20)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in, make([]byte, 3<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		r := execfarm(t, "run", "--runtime", "shell", "--stdin", in, prog)
		if r.code != 126 || !strings.Contains(r.stderr, "the program (2097154 bytes) and --stdin (3145728 bytes) are 5242882 bytes together") {
			t.Errorf("2 MiB of program and 3 MiB of stdin: %+v, want 126 naming both sizes", r)
		}
	})
}

// TestHealthShowsTheMemoryBudget: health prints the node's memory budget
// and what is held of it; -o json carries the same in bytes
// (memoryBudgetBytes, memoryHeldBytes).
func TestHealthShowsTheMemoryBudget(t *testing.T) {
	requireServe(t)
	h := jsonOf(t, execfarm(t, "health", "-o", "json"))
	total, err := strconv.ParseInt(fmt.Sprint(field(h, "memoryBudgetBytes")), 10, 64)
	if err != nil || total <= 0 {
		t.Fatalf("health -o json: memoryBudgetBytes %v (%v), want the budget in bytes", field(h, "memoryBudgetBytes"), err)
	}
	if _, err := strconv.ParseInt(fmt.Sprint(field(h, "memoryHeldBytes")), 10, 64); err != nil {
		t.Errorf("health -o json: memoryHeldBytes %v (%v), want the bytes held", field(h, "memoryHeldBytes"), err)
	}
	r := execfarm(t, "health")
	line := regexp.MustCompile(`(?m)^memory budget: .+ held of ` + regexp.QuoteMeta(budget.Format(total)) + ` \(.+ free\)$`)
	if r.code != 0 || !line.MatchString(r.stdout) {
		t.Errorf("health: exit %d, want a line naming the budget of %s and what is held:\n%s", r.code, budget.Format(total), r.stdout)
	}
}
