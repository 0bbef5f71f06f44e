package program

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/runtime/deterministic"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/testresult"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/runtime/transformer"
	"google.golang.org/protobuf/proto"
)

// Runtime names.
const (
	Goja   = "goja"
	Node   = "node"
	Shell  = "shell"
	Python = "python"
)

// Sentinel errors; the supervisor maps ErrUnknownRuntime and ErrBadEnv to
// INVALID_ARGUMENT and ErrUnavailable to UNIMPLEMENTED.
var (
	ErrUnknownRuntime = errors.New("program: unknown runtime")
	ErrUnavailable    = errors.New("program: runtime not available on this server")
	ErrBadEnv         = errors.New("program: invalid environment variable")
)

// Input is what a caller asked to run.
type Input struct {
	// Runtime is one of Goja, Node, Shell, Python.
	Runtime string
	// Code is the program text (TypeScript or JavaScript for goja, a shell
	// command line for shell, Python source for python).
	Code string
	// Argv, instead of Code (runtime Shell), is a program and its
	// arguments, run without a shell interpreting them (ArgvCommand).
	Argv []string
	// Stdin is given to the program on standard input.
	Stdin []byte
	// Env is added to the base environment; keys must be non-empty and
	// contain neither '=' nor NUL, values no NUL.
	Env map[string]string
	// Deterministic asks goja and node for a fixed clock and Math.random
	// (node: crypto.getRandomValues and randomUUID too) seeded with Seed
	// (runtime/deterministic); shell and python ignore it.
	Deterministic bool
	Seed          int64
	// Node configures the node runtime; nil means this server has no node
	// runtime bundle (the node runtime is then unavailable).
	Node *node.Config
	// Tests runs the code in test mode (goja, node): TestsCode runs after
	// Code, with the harness' `test` and `assert`, and results go to a
	// channel of their own (RunRequest.results), each line starting with
	// a nonce the program gets on fd 3 (package testresult). Code may be
	// empty then.
	Tests bool
	// TestsCode is the tests (TypeScript or JavaScript) in test mode; ""
	// means Code is the tests, with no code under test.
	TestsCode string
}

// ErrNoTestMode is returned for test mode on a runtime without one.
var ErrNoTestMode = errors.New("program: test mode needs the goja or node runtime")

// Bounds of what the kernel's execve takes (shell and python get their
// code as one argument). MaxArgBytes is MAX_ARG_STRLEN (32 pages) less the
// terminating NUL: the longest single argument or environment string.
// MaxArgvEnvBytes bounds argv and environment together, well within
// ARG_MAX (a quarter of the 8 MiB stack rlimit) once the runtime's own
// strings are added.
const (
	MaxArgBytes     = 32*4096 - 1
	MaxArgvEnvBytes = 1 << 20
)

// ErrArgTooLong is wrapped by an *ArgError.
var ErrArgTooLong = errors.New("program: argument too long")

// ArgError is code or an environment string longer than execve takes: the
// request is refused before a sandbox is spent. It wraps ErrArgTooLong.
type ArgError struct {
	// Field is the request field: "code" or "env" ("argv" for a
	// runtime's own arguments), or the name a caller gives CheckArg.
	Field string
	// Bytes is its length, Limit the most allowed; bytes.
	Bytes, Limit int
}

func (e *ArgError) Error() string {
	if e.Field == "env" || e.Field == "argv" {
		return fmt.Sprintf("%s is %d bytes; at most %d bytes fit a command line and environment", e.Field, e.Bytes, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes; the shell and python runtimes pass it as one command-line argument, at most %d bytes (MAX_ARG_STRLEN); use goja or node, or a shorter program", e.Field, e.Bytes, e.Limit)
}

// Unwrap returns ErrArgTooLong.
func (e *ArgError) Unwrap() error { return ErrArgTooLong }

// ErrNULByte is wrapped by a *NULError.
var ErrNULByte = errors.New("program: NUL byte in a command-line argument")

// NULError is code that becomes a command-line argument (shell and python
// code) holding a NUL byte. execve(2) takes NUL-terminated strings, so
// the start inside the sandbox could only fail (EINVAL, "invalid
// argument"): the request is refused before a sandbox is spent. It wraps
// ErrNULByte. Environment strings with NUL are ErrBadEnv (environ).
type NULError struct {
	// Field is the request field: "code", or the name a caller gives
	// CheckArg (an MCP tool's argument).
	Field string
	// Offset is the byte offset of the first NUL.
	Offset int
}

func (e *NULError) Error() string {
	if e.Field == "argv" {
		return fmt.Sprintf("argv holds a NUL byte (at byte %d of an argument); execve takes NUL-terminated strings, so no argument can hold one", e.Offset)
	}
	return fmt.Sprintf("%s holds a NUL byte (at byte %d); the shell and python runtimes pass it as a command-line argument, which cannot hold one (execve takes NUL-terminated strings); write the byte from the program instead (printf '\\0', chr(0))", e.Field, e.Offset)
}

// Unwrap returns ErrNULByte.
func (e *NULError) Unwrap() error { return ErrNULByte }

// CheckArg returns the refusal of s, the request field field, as one
// command-line argument of a runtime process: a *NULError when it holds a
// NUL byte, an *ArgError when it is over MaxArgBytes; nil when execve
// takes it. Build checks every argument it makes with it; a front end
// (the MCP bridge) may check its own argument first, to name it.
func CheckArg(field, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return &NULError{Field: field, Offset: i}
	}
	if len(s) > MaxArgBytes {
		return &ArgError{Field: field, Bytes: len(s), Limit: MaxArgBytes}
	}
	return nil
}

// baseEnv is every runtime process's environment before Input.Env.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=" + rootfs.WorkspaceDir,
	"USER=sandbox",
	"LANG=C.UTF-8",
}

// ReservedEnvPrefix starts the environment names execfarm keeps for itself;
// a request may not set them.
const ReservedEnvPrefix = "EXECFARM_"

// Available returns nil when runtime runs on a server whose node runtime
// is nodeCfg (nil: no node runtime bundle); otherwise an error wrapping
// ErrUnavailable, or ErrUnknownRuntime for a name that is no runtime.
func Available(runtime string, nodeCfg *node.Config) error {
	switch runtime {
	case Goja, Shell, Python:
		return nil
	case Node:
		if nodeCfg == nil {
			return fmt.Errorf("%w: node (no runtime bundle installed: make bundle)", ErrUnavailable)
		}
		return nil
	}
	return fmt.Errorf("%w: %q", ErrUnknownRuntime, runtime)
}

// MaxRequestBytes bounds the worker's request (the RunRequest Build
// returns, program and stdin included), bytes: the worker's gRPC server
// takes messages up to grpc-go's default of 4 MiB, which go-plugin keeps,
// and 64 KiB of that is left for the rlimits and the rest of the call.
const MaxRequestBytes = 4<<20 - 64<<10

// SizeError is returned for a request the worker would not take: its
// program (transformed) and stdin together are over MaxRequestBytes.
type SizeError struct {
	Bytes, Limit int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("the program and its stdin are %d bytes once transformed; at most %d", e.Bytes, e.Limit)
}

// Build returns the worker request for in, transforming goja and node
// code with runtime/transformer (in a helper process; ctx bounds the wait
// for one). TypeScript syntax errors come back as *transform.SyntaxError;
// code past a helper's bounds as *transformer.LimitError; a transform
// the host's load starved or the helpers' queue refused as
// transformer.ErrStarved or transformer.ErrBusy (retryable); empty code as
// transform.ErrEmptyCode (whitespace alone is code, which runs and does
// nothing); shell or python code execve would refuse as *ArgError (too
// long) or *NULError (a NUL byte); a request over MaxRequestBytes as
// *SizeError; env for a goja or node program (their process.env is
// always empty), or env holding NUL, as ErrBadEnv.
func Build(ctx context.Context, in Input) (*workerv1.RunRequest, error) {
	if len(in.Argv) > 0 {
		return buildArgv(in)
	}
	if in.Code == "" && (!in.Tests || in.TestsCode == "") {
		return nil, transform.ErrEmptyCode
	}
	env, err := environ(in.Env)
	if err != nil {
		return nil, err
	}
	if len(in.Env) > 0 && (in.Runtime == Goja || in.Runtime == Node) {
		// Their process.env is empty whatever the process's environment
		// holds (SECURITY.md); a caller's variables would vanish unseen.
		return nil, fmt.Errorf("%w: env reaches shell and python programs only; a %s program's process.env is empty", ErrBadEnv, in.Runtime)
	}
	req := &workerv1.RunRequest{Env: env, Dir: rootfs.WorkspaceDir, Stdin: in.Stdin}
	if in.Tests && in.Runtime != Goja && in.Runtime != Node {
		return nil, fmt.Errorf("%w (got %s)", ErrNoTestMode, in.Runtime)
	}
	switch in.Runtime {
	case Goja:
		js, err := transformJS(ctx, transformer.Goja, in)
		if err != nil {
			return nil, err
		}
		req.Argv = []string{rootfs.GojaPath}
		req.SignalsReady = true
		req.Console = true
		req.Env = append(req.Env, jsconsole.EnvFD+"="+strconv.Itoa(jsconsole.FD))
		if in.Tests {
			req.Argv = append(req.Argv, testresult.GojaArg)
			req.Results = true
		}
		req.Program = []byte(js)
		if in.Deterministic {
			req.Env = append(req.Env, deterministic.Env+"=1", deterministic.SeedEnv+"="+strconv.FormatInt(in.Seed, 10))
		}
	case Shell:
		req.Argv = []string{"/bin/sh", "-c", in.Code}
	case Python:
		// -u: stdout and stderr are pipes, which python block-buffers;
		// a timeout or kill (SIGKILL through the cgroup) leaves no chance
		// to flush, and what the program printed would be lost. A
		// caller's PYTHONUNBUFFERED cannot undo a command-line flag.
		req.Argv = []string{"/usr/bin/python3", "-u", "-c", in.Code}
	case Node:
		if err := Available(Node, in.Node); err != nil {
			return nil, err
		}
		js, err := transformJS(ctx, transformer.Node, in)
		if err != nil {
			return nil, err
		}
		nc := *in.Node
		nc.Tests = in.Tests
		nc.Console = true
		if in.Deterministic {
			nc.Seed = &in.Seed
		}
		req.Results = in.Tests
		req.Console = true
		if req.Argv, err = node.Argv(nc); err != nil {
			return nil, err
		}
		req.Program = []byte(js)
		// Nothing from the environment: node reads NODE_OPTIONS (which can
		// load files) before the prelude runs, and the prelude leaves
		// process.env empty anyway.
		req.Env = nil
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownRuntime, in.Runtime)
	}
	if err := checkExecve(in, req); err != nil {
		return nil, err
	}
	if n := proto.Size(req); n > MaxRequestBytes {
		return nil, &SizeError{Bytes: n, Limit: MaxRequestBytes}
	}
	return req, nil
}

// ErrArgv is wrapped by the refusal of an Argv that cannot run: an
// empty program name, code beside it, a runtime other than Shell, test
// mode.
var ErrArgv = errors.New("program: invalid argv")

// buildArgv is Build for in.Argv.
func buildArgv(in Input) (*workerv1.RunRequest, error) {
	switch {
	case in.Code != "":
		return nil, fmt.Errorf("%w: give code or argv, not both", ErrArgv)
	case in.Runtime != Shell:
		return nil, fmt.Errorf("%w: argv runs a program without a runtime; the runtime must be shell or unspecified, not %s", ErrArgv, in.Runtime)
	case in.Tests:
		return nil, fmt.Errorf("%w: argv has no test mode", ErrArgv)
	case in.Argv[0] == "":
		return nil, fmt.Errorf("%w: argv[0], the program, is empty", ErrArgv)
	}
	env, err := environ(in.Env)
	if err != nil {
		return nil, err
	}
	req := &workerv1.RunRequest{Env: env, Dir: rootfs.WorkspaceDir, Stdin: in.Stdin, Argv: ArgvCommand(in.Argv)}
	if err := checkExecve(in, req); err != nil {
		return nil, err
	}
	if n := proto.Size(req); n > MaxRequestBytes {
		return nil, &SizeError{Bytes: n, Limit: MaxRequestBytes}
	}
	return req, nil
}

// argvExec is the script that runs a program name without a '/' found on
// PATH: dash's exec takes no options, so every argument, "-x" or "A=b",
// stays the program's; "$@" is expanded once, never split or globbed.
const argvExec = `exec "$@"`

// ArgvCommand is the runtime process's argv for argv, run as it is: a
// program named with a '/' is executed directly (relative to the working
// directory); one without is looked up on the PATH of its environment as
// execvp does, by /bin/sh's exec, which interprets none of the arguments
// (a program not found exits 127, "not found" on stderr).
func ArgvCommand(argv []string) []string {
	if strings.Contains(argv[0], "/") {
		return slices.Clone(argv)
	}
	return append([]string{"/bin/sh", "-c", argvExec, "execfarm"}, argv...)
}

// transformJS transforms a goja or node program. In test mode the code and
// the tests are transformed apart and assembled for the harness
// (testresult.Assemble), and the program is the payload of a fresh nonce
// (testresult.EncodePayload).
func transformJS(ctx context.Context, mode transformer.Kind, in Input) (string, error) {
	if !in.Tests {
		return transformer.Transform(ctx, mode, in.Code)
	}
	code, testsCode := in.Code, in.TestsCode
	if testsCode == "" {
		// Tests alone.
		code, testsCode = "", in.Code
	}
	if code != "" {
		var err error
		if code, err = transformer.Transform(ctx, mode, code); err != nil {
			return "", err
		}
	}
	tests, err := transformer.Transform(ctx, mode, testsCode)
	if err != nil {
		return "", err
	}
	names := testresult.ModuleNames(testsCode)
	var prog string
	if mode == transformer.Node {
		prog, err = node.AssembleTests(code, tests, names)
	} else {
		prog = gojaTests(code, tests, names)
	}
	if err != nil {
		return "", err
	}
	return string(testresult.EncodePayload(testresult.NewNonce(), prog)), nil
}

// gojaTests assembles the goja transforms of code and tests: an IIFE
// (the transform of code with import or export statements) returns the
// assembly from inside, where the code's declarations are; the code's
// source map goes last, where the runtime looks for it.
func gojaTests(code, tests string, names []string) string {
	code, codeMap := transform.SplitSourceMap(code)
	tests, _ = transform.SplitSourceMap(tests)
	const iifeStart, iifeEnd = "(() => {\n", "})();\n"
	var prog string
	if strings.HasPrefix(code, iifeStart) && strings.HasSuffix(code, iifeEnd) {
		inner := code[len(iifeStart) : len(code)-len(iifeEnd)]
		prog = "return (() => {\n" + testresult.Assemble(inner, tests, names) + "})();\n"
	} else {
		prog = testresult.Assemble(code, tests, names)
	}
	if codeMap != "" {
		prog += codeMap
	}
	return prog
}

// checkExecve refuses a request whose argv or environment execve would
// refuse inside the sandbox, after one had been started: E2BIG for too
// long, EINVAL for an argument holding NUL (CheckArg).
func checkExecve(in Input, req *workerv1.RunRequest) error {
	total := 0
	for _, a := range req.Argv {
		field := "argv"
		if len(in.Argv) == 0 && a == in.Code {
			field = "code"
		}
		if err := CheckArg(field, a); err != nil {
			return err
		}
		total += len(a) + 1
	}
	for _, e := range req.Env {
		if len(e) > MaxArgBytes {
			return &ArgError{Field: "env", Bytes: len(e), Limit: MaxArgBytes}
		}
		total += len(e) + 1
	}
	if total > MaxArgvEnvBytes {
		return &ArgError{Field: "env", Bytes: total, Limit: MaxArgvEnvBytes}
	}
	return nil
}

func environ(extra map[string]string) ([]string, error) {
	env := append([]string(nil), baseEnv...)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%w: %q", ErrBadEnv, k)
		}
		if strings.HasPrefix(k, ReservedEnvPrefix) {
			// execfarm's own switches to its runtimes (EXECFARM_READY_FD,
			// EXECFARM_DETERMINISTIC) are not the caller's to set.
			return nil, fmt.Errorf("%w: %q: names starting with %s are reserved", ErrBadEnv, k, ReservedEnvPrefix)
		}
		// A caller's value replaces the base one rather than shadowing it.
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		env = append(env, k+"="+v)
	}
	return env, nil
}
