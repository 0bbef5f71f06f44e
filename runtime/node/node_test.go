package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/deterministic/detertest"
	"github.com/execfarm/execfarm/runtime/jsconsole/consoletest"
	"github.com/execfarm/execfarm/runtime/transform"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// requireBundle returns the absolute path of runtime/node/bundle and fails
// the test when its node_modules is not installed. It skips when the host
// has no node.
func requireBundle(t *testing.T) (nodePath, bundle string) {
	t.Helper()
	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	bundle, err = FindBundle("bundle")
	if err != nil {
		t.Fatalf("%v: run npm ci --prefix runtime/node/bundle --ignore-scripts", err)
	}
	return nodePath, bundle
}

type result struct {
	stdout, stderr string
	exit           int
	console        []byte // the console channel, with Config.Console
}

// runNode transforms code and runs it with the prelude on the host, the
// program on fd 3 and a non-empty environment that must not reach it.
func runNode(t *testing.T, code string, cfg Config) result {
	t.Helper()
	nodePath, bundle := requireBundle(t)
	js, err := Transform(code)
	if err != nil {
		t.Fatalf("Transform: %v", err)
	}
	cfg.NodePath, cfg.BundleDir = nodePath, bundle
	argv, err := Argv(cfg)
	if err != nil {
		t.Fatalf("Argv: %v", err)
	}
	prog, err := os.CreateTemp(t.TempDir(), "prog")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if _, err := prog.WriteString(js); err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"SECRET_TOKEN=hunter2", "SANDBOX_ALLOWED_MODULES=fs"}
	cmd.Dir = t.TempDir()
	cmd.ExtraFiles = []*os.File{prog}
	if cfg.Console {
		// fd 6 (jsconsole.FD): ExtraFiles[i] is fd 3+i; nil ones are closed.
		// A file, not a pipe: nothing has to read it while node runs.
		f, err := os.CreateTemp(t.TempDir(), "console")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, nil, nil, f)
	}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run node: %v", err)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), exit: cmd.ProcessState.ExitCode()}
	if cfg.Console {
		b, err := os.ReadFile(cmd.ExtraFiles[3].Name())
		if err != nil {
			t.Fatal(err)
		}
		r.console = b
	}
	return r
}

func TestRequire(t *testing.T) {
	const probe = `
for (const m of MODULES) {
  try { const x = require(m); console.log("ok " + m + " " + typeof x); }
  catch (e) { console.log(e.code + " " + e.message); }
}`
	cases := []struct {
		name    string
		modules []string
		cfg     Config
		want    []string
	}{
		{
			name:    "refused",
			modules: []string{"child_process", "fs", "node:fs", "./x", "../x", "/etc/passwd", "uvu/../kleur", "kleur", "", "file:///etc/passwd", "@kubernetes/client-node/../../kleur"},
			want: []string{
				"MODULE_NOT_FOUND Module 'child_process' not available in sandbox",
				"MODULE_NOT_FOUND Module 'fs' not available in sandbox",
				"MODULE_NOT_FOUND Module 'node:fs' not available in sandbox",
				"MODULE_NOT_FOUND Module './x' not available in sandbox",
				"MODULE_NOT_FOUND Module '../x' not available in sandbox",
				"MODULE_NOT_FOUND Module '/etc/passwd' not available in sandbox",
				"MODULE_NOT_FOUND Module 'uvu/../kleur' not available in sandbox",
				"MODULE_NOT_FOUND Module 'kleur' not available in sandbox",
				"MODULE_NOT_FOUND Module '' not available in sandbox",
				"MODULE_NOT_FOUND Module 'file:///etc/passwd' not available in sandbox",
				"MODULE_NOT_FOUND Module '@kubernetes/client-node/../../kleur' not available in sandbox",
			},
		},
		{
			name:    "default list",
			modules: []string{"@kubernetes/client-node/dist/config", "prometheus-query", "uvu", "uvu/assert", "simple-statistics"},
			want: []string{
				"ok @kubernetes/client-node/dist/config object",
				"ok prometheus-query object",
				"ok uvu object",
				"ok uvu/assert object",
				// Allowed by the reference's list but not in the bundle.
				"MODULE_NOT_FOUND Module 'simple-statistics' not available in sandbox",
			},
		},
		{
			name:    "builtin on the list",
			modules: []string{"fs", "child_process"},
			cfg:     Config{AllowedModules: []string{"fs", "child_process"}},
			want: []string{
				"MODULE_NOT_FOUND Module 'fs' not available in sandbox",
				"MODULE_NOT_FOUND Module 'child_process' not available in sandbox",
			},
		},
		{
			name:    "only uvu",
			modules: []string{"@kubernetes/client-node", "@kubernetes/client-node/dist/config", "prometheus-query", "uvu/assert"},
			cfg:     Config{AllowedModules: mustParse(t, `["uvu"]`)},
			want: []string{
				"MODULE_NOT_FOUND Module '@kubernetes/client-node' not available in sandbox",
				"MODULE_NOT_FOUND Module '@kubernetes/client-node/dist/config' not available in sandbox",
				"MODULE_NOT_FOUND Module 'prometheus-query' not available in sandbox",
				"ok uvu/assert object",
			},
		},
		{
			name:    "comma list",
			modules: []string{"prometheus-query", "@kubernetes/client-node/dist/config", "uvu"},
			cfg:     Config{AllowedModules: mustParse(t, " prometheus-query , ")},
			want: []string{
				"ok prometheus-query object",
				"MODULE_NOT_FOUND Module '@kubernetes/client-node/dist/config' not available in sandbox",
				"ok uvu object",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list, err := json.Marshal(tc.modules)
			if err != nil {
				t.Fatal(err)
			}
			r := runNode(t, "const MODULES: string[] = "+string(list)+";\n"+probe, tc.cfg)
			if r.exit != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.exit, r.stderr)
			}
			got := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func mustParse(t *testing.T, s string) []string {
	t.Helper()
	l, err := ParseAllowedModules(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestProgram(t *testing.T) {
	cases := []struct {
		name   string
		code   string
		cfg    Config
		stdout string
		exit   int
		stderr []string
	}{
		{
			name:   "empty env",
			code:   `console.log(JSON.stringify(process.env), Object.keys(process.env).length);`,
			stdout: "{} 0\n",
		},
		{
			name:   "top-level await",
			code:   "const n: number = await new Promise<number>(r => setTimeout(() => r(42), 1));\nconsole.log(n);",
			stdout: "42\n",
		},
		{
			// As node's own ES module loader ends it; process.exit still
			// decides when called.
			name:   "unsettled top-level await",
			code:   "console.log('before');\nawait new Promise(() => {});\nconsole.log('never');",
			stdout: "before\n",
			exit:   13,
			stderr: []string{"Warning: Detected unsettled top-level await"},
		},
		{
			name: "process.exit beside an unsettled top level",
			code: "setTimeout(() => process.exit(0), 1);\nawait new Promise(() => {});",
		},
		{
			name:   "import statements use the sandbox require",
			code:   "import { KubeConfig } from '@kubernetes/client-node';\nimport { PrometheusDriver } from 'prometheus-query';\nconsole.log(typeof KubeConfig, typeof PrometheusDriver);",
			stdout: "function function\n",
		},
		{
			name:   "import of a builtin",
			code:   "import { readFileSync } from 'fs';\nconsole.log(readFileSync);",
			exit:   1,
			stderr: []string{"Module 'fs' not available in sandbox"},
		},
		{
			name:   "dynamic import",
			code:   "const name = 'child_process';\ntry { await import(name); } catch (e) { console.log(e.message); }\nconst u = await import('uvu/assert');\nconsole.log(typeof u.ok);",
			stdout: "Module 'child_process' not available in sandbox\nfunction\n",
		},
		{
			name:   "k8s and kc",
			code:   "console.log(typeof k8s.CoreV1Api, kc instanceof k8s.KubeConfig, kc.getContexts().length);",
			stdout: "function true 0\n",
		},
		{
			name:   "kc on a local server",
			code:   "console.log(kc.getCurrentCluster().server, JSON.stringify(kc.getCurrentUser()));",
			cfg:    Config{KubeServer: "http://127.0.0.1:8001"},
			stdout: "http://127.0.0.1:8001 {\"name\":\"sandbox\"}\n",
		},
		{
			name: "no way back to the real require",
			code: `console.log([typeof globalThis.require, typeof globalThis.module, typeof process.mainModule,
  typeof process.binding, typeof process.dlopen, typeof process.getBuiltinModule, typeof require.main,
  typeof require.cache, typeof module.require, typeof module.constructor._load].join(" "));
await new Promise(r => setTimeout(r, 1));
console.log(typeof globalThis.module, typeof globalThis.require);`,
			stdout: "undefined undefined undefined undefined undefined undefined undefined undefined undefined undefined\nundefined undefined\n",
		},
		{
			name:   "no eval",
			code:   `try { eval("1"); } catch (e) { console.log(e.constructor.name); }`,
			stdout: "EvalError\n",
		},
		{
			name:   "uncaught error names the user's line",
			code:   "const a = 1;\n\nthrow new Error('boom');",
			exit:   1,
			stderr: []string{"Error: boom", "main.ts:3:7"},
		},
		{
			// As in goja and in ProDisco, whose console.warn is not an
			// error stream: only console.error (and trace, assert) write
			// to stderr.
			name:   "console streams",
			code:   "console.log('l'); console.info('i'); console.warn('w'); console.debug('d');",
			stdout: "l\ni\nw\nd\n",
		},
		{
			name:   "process.exit",
			code:   "console.log('bye');\nprocess.exit(3);",
			stdout: "bye\n",
			exit:   3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runNode(t, tc.code, tc.cfg)
			if r.exit != tc.exit {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", r.exit, tc.exit, r.stdout, r.stderr)
			}
			if tc.exit == 0 || tc.stdout != "" {
				if r.stdout != tc.stdout {
					t.Errorf("stdout %q, want %q (stderr %q)", r.stdout, tc.stdout, r.stderr)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not contain %q:\n%s", s, r.stderr)
				}
			}
			if tc.exit == 0 && r.stderr != "" {
				t.Errorf("unexpected stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestTransformErrors(t *testing.T) {
	cases := []struct {
		name       string
		code       string
		line, col  int
		wantSyntax bool
		wantEmpty  bool
	}{
		{name: "empty", code: "", wantEmpty: true},
		{name: "missing expression", code: "const a = 1;\nconst b: number = ;\n", line: 2, col: 19, wantSyntax: true},
		{name: "unterminated string", code: "let s = 'é\n", line: 1, col: 11, wantSyntax: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Transform(tc.code)
			if tc.wantEmpty {
				if !errors.Is(err, transform.ErrEmptyCode) {
					t.Fatalf("err %v, want ErrEmptyCode", err)
				}
				return
			}
			var se *transform.SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, transform.ErrSyntax) {
				t.Fatalf("err %v, want *transform.SyntaxError", err)
			}
			if se.Line != tc.line || se.Column != tc.col {
				t.Errorf("at %d:%d, want %d:%d (%v)", se.Line, se.Column, tc.line, tc.col, se)
			}
		})
	}
}

func TestTransformShape(t *testing.T) {
	js, err := Transform("export const x = 1;\nconsole.log(await Promise.resolve(x));")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(js, Prefix+"\n") {
		t.Errorf("output does not start with Prefix:\n%s", js)
	}
	if strings.Contains(js, "export ") || strings.Contains(js, "import ") {
		t.Errorf("output keeps module syntax:\n%s", js)
	}
	if !strings.Contains(js, "\n//# sourceMappingURL=data:application/json;base64,") {
		t.Errorf("output has no inline source map:\n%s", js)
	}
}

func TestParseAllowedModules(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "  ", want: nil},
		{in: `["uvu", " prometheus-query ", "", 3, "uvu"]`, want: []string{"uvu", "prometheus-query"}},
		{in: "uvu, @kubernetes/client-node,,", want: []string{"uvu", "@kubernetes/client-node"}},
		{in: `{"a":1}`, want: []string{`{"a":1}`}},
		{in: "[]", wantErr: true},
		{in: " , ,", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAllowedModules(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadConfig) {
					t.Fatalf("err %v, want ErrBadConfig", err)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") || (got == nil) != (tc.want == nil) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestArgv(t *testing.T) {
	argv, err := Argv(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if argv[0] != NodePath || !strings.Contains(strings.Join(argv, " "), "--allow-fs-read="+filepath.Join(SandboxDir, "*")) {
		t.Errorf("argv %q", argv[:4])
	}
	var pc preludeConfig
	if err := json.Unmarshal([]byte(argv[len(argv)-1]), &pc); err != nil {
		t.Fatal(err)
	}
	if pc.Bundle != SandboxDir || strings.Join(pc.Allowed, ",") != strings.Join(DefaultAllowedModules(), ",") {
		t.Errorf("prelude config %+v", pc)
	}
	bad := []struct {
		name string
		cfg  Config
		err  error
	}{
		{"kubeconfig and server", Config{KubeconfigPath: "/k", KubeServer: "http://127.0.0.1:1"}, ErrConflict},
		{"relative bundle", Config{BundleDir: "bundle"}, ErrBadConfig},
		{"comma in path", Config{KubeconfigPath: "/a,b"}, ErrBadConfig},
		{"empty module", Config{AllowedModules: []string{""}}, ErrBadConfig},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Argv(tc.cfg); !errors.Is(err, tc.err) {
				t.Errorf("err %v, want %v", err, tc.err)
			}
		})
	}
}

func TestFindBundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindBundle(dir); !errors.Is(err, ErrNoBundle) {
		t.Errorf("empty dir: err %v, want ErrNoBundle", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindBundle(dir)
	if err != nil || got != dir {
		t.Errorf("FindBundle(%s) = %q, %v", dir, got, err)
	}
	t.Setenv(BundleEnv, dir)
	if got, err := FindBundle(""); err != nil || got != dir {
		t.Errorf("FindBundle from $%s = %q, %v", BundleEnv, got, err)
	}
}

// TestConsoleChannel: the shared program (package consoletest) gives the
// console channel and raw output goja gives for it.
func TestConsoleChannel(t *testing.T) {
	tc, err := consoletest.Load()
	if err != nil {
		t.Fatal(err)
	}
	r := runNode(t, tc.Program, Config{Console: true})
	if r.exit != 1 {
		t.Errorf("exit %d, want 1", r.exit)
	}
	for _, d := range tc.Check(r.stdout, r.stderr, r.console) {
		t.Error(d)
	}
}

// TestDeterministic: with Config.Seed, node prints what goja prints for
// detertest's program (the clock from deterministic.EpochMs moved only by
// timers, in that clock's order, and deterministic.NewRand's Math.random);
// crypto.getRandomValues and randomUUID repeat with the seed too.
func TestDeterministic(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		if r := runNode(t, detertest.Program, Config{Seed: &seed}); r.exit != 0 || r.stdout != detertest.Want(seed) {
			t.Errorf("seed %d: exit %d, printed\n%s\nwant\n%s%s", seed, r.exit, r.stdout, detertest.Want(seed), r.stderr)
		}
	}
	const cryptoProg = `const b = new Uint8Array(8); crypto.getRandomValues(b); console.log(Array.from(b).join(","), crypto.randomUUID())`
	seed, other := int64(7), int64(8)
	a, b, c := runNode(t, cryptoProg, Config{Seed: &seed}), runNode(t, cryptoProg, Config{Seed: &seed}), runNode(t, cryptoProg, Config{Seed: &other})
	if a.exit != 0 || a.stdout != b.stdout || a.stdout == c.stdout {
		t.Errorf("crypto: seed 7 printed %q then %q, seed 8 %q (exit %d, %s)", a.stdout, b.stdout, c.stdout, a.exit, a.stderr)
	}
	if r := runNode(t, `console.log(Date.now())`, Config{}); strings.HasPrefix(r.stdout, "946684800000") {
		t.Errorf("clock fixed without a seed: %q", r.stdout)
	}
}
