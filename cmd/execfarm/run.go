package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
)

func runCmd(cf *clientFlags) *cobra.Command {
	var (
		rt        string
		code      string
		cached    string
		async     bool
		verbose   bool
		stdinFrom string
		env       []string
		lim       limitFlags
		det       deterministicFlags
	)
	cmd := &cobra.Command{
		Use:   "run [flags] (FILE | -e CODE | - | --cached NAME)",
		Short: "Run a program in a fresh sandbox and print its output",
		Long: `Run a program in a fresh sandbox. Its stdout and stderr are printed as they
arrive (with -o json or yaml: once it has ended, the result with both
streams, how it ended and the limits it ran with). A stream past its
output limit keeps head and tail: each kept byte is printed once, in
order, a line on stderr marks where bytes are missing and how many, and
the end says the stream was truncated (exit status 137 if the program
exited 0). The limits take units:
--memory 256Mi, --timeout 2s, --cpus 0.5. With no supervisor configured
(flags or SANDBOX_* variables) and none at the default socket, run starts
an embedded supervisor for the one execution; --async needs a running one.

` + exitCodesHelp,
		Args: cobra.MaximumNArgs(1),
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		r, ok := sandboxv1.ParseRuntime(rt)
		if !ok {
			return fmt.Errorf("unknown runtime %q (goja, node, shell, python)", rt)
		}
		// Raw output: the program's stdout and stderr as it wrote them.
		req := &sandboxv1.ExecuteRequest{Runtime: r, RawOutput: true}
		var err error
		if req.Deterministic, req.Seed, err = det.get(cmd.Flags(), r); err != nil {
			return err
		}
		if cached != "" {
			if code != "" || len(args) > 0 {
				return errors.New("give --cached NAME, -e CODE or a file, not two")
			}
			req.Source = &sandboxv1.ExecuteRequest_Cached{Cached: cached}
		} else {
			src, err := source(code, args)
			if err != nil {
				return err
			}
			req.Source = &sandboxv1.ExecuteRequest_Code{Code: src}
		}
		if req.Env, err = parseEnv(env); err != nil {
			return err
		}
		if req.Limits, err = lim.proto(); err != nil {
			return err
		}
		if stdinFrom != "" {
			if stdinFrom == "-" && len(args) > 0 && args[0] == "-" {
				return errors.New("--stdin - and a program read from - both want standard input")
			}
			if req.Stdin, err = readStdin(stdinFrom); err != nil {
				return err
			}
			if err := checkRequestBytes(requestPart{"the program", len(req.GetCode())}, requestPart{"--stdin", len(req.Stdin)}); err != nil {
				return err
			}
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if async {
			// An embedded supervisor would end, and the execution with
			// it, when this command exits: the id would name nothing.
			client, closeFn, err := cf.connectNoEmbed("run --async needs a running supervisor: an embedded one would stop, with the execution, when this command exits")
			if err != nil {
				return err
			}
			defer closeFn()
			resp, err := client.ExecuteAsync(ctx, req)
			if err != nil {
				return cf.reach(err)
			}
			if out.structured() {
				return printMessage(cmd.OutOrStdout(), *out, resp)
			}
			fmt.Fprintln(cmd.OutOrStdout(), resp.GetExecutionId())
			return nil
		}
		client, closeFn, err := cf.connectOrEmbed(ctx, verbose)
		if err != nil {
			return err
		}
		defer closeFn()
		if out.structured() {
			resp, err := client.Execute(ctx, req)
			if err != nil {
				return cf.reach(err)
			}
			if resp.GetOutputPartial() || resp.GetErrorOutputPartial() {
				// Execute carries the first page of each stream: read
				// them whole.
				var stdout, stderr strings.Builder
				if _, err := readExecution(ctx, client, resp.GetOutcome().GetExecutionId(), false, &stdout, &stderr, nil); err != nil {
					return cf.reach(err)
				}
				resp.Output, resp.ErrorOutput = stdout.String(), stderr.String()
				resp.OutputPartial, resp.ErrorOutputPartial = false, false
			}
			if err := printMessage(cmd.OutOrStdout(), *out, resp); err != nil {
				return err
			}
			return resultExit(resp.GetSuccess(), resp.GetState(), resp.GetOutcome())
		}
		return cf.reach(stream(ctx, client, req, verbose))
	}
	f := cmd.Flags()
	f.StringVar(&rt, "runtime", "", "goja (TypeScript/JavaScript), node, shell, python (default: the server's)")
	f.StringVarP(&code, "eval", "e", "", "run CODE instead of a file")
	f.StringVar(&cached, "cached", "", "run the cached script NAME (exact, without .ts, or a unique part of it: cache list)")
	f.StringArrayVar(&env, "env", nil, "set the program's environment variable K to V (K=V; repeatable; shell and python: a goja or node program's process.env is empty)")
	lim.register(f, "the execution")
	det.register(f)
	f.BoolVar(&async, "async", false, "submit and print the execution id (needs a running supervisor)")
	f.BoolVarP(&verbose, "verbose", "v", false, "print the termination reason and resource usage to stderr")
	f.StringVar(&stdinFrom, "stdin", "", "give the program FILE, or - for this command's standard input, as its standard input (at most 3 MiB; default: none)")
	return cmd
}

// deterministicFlags are --deterministic and --seed (run, test).
type deterministicFlags struct {
	on   bool
	seed int64
}

func (d *deterministicFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&d.on, "deterministic", false, "goja and node: a clock that starts at 2000-01-01T00:00:00Z and moves only when a timer fires, "+
		"and Math.random (node: crypto.getRandomValues, randomUUID) seeded with --seed, so that a re-run prints the same")
	fs.Int64Var(&d.seed, "seed", 0, "the seed of a --deterministic run")
}

// get returns the request's deterministic and seed for runtime r; --seed
// alone is refused (it would be ignored), and so is --deterministic with
// a runtime named shell or python (the server refuses it too, with
// INVALID_ARGUMENT naming the field: they have no such clock).
func (d *deterministicFlags) get(fs *pflag.FlagSet, r sandboxv1.Runtime) (bool, int64, error) {
	if fs.Changed("seed") && !d.on {
		return false, 0, errors.New("--seed needs --deterministic")
	}
	if d.on && (r == sandboxv1.Runtime_RUNTIME_SHELL || r == sandboxv1.Runtime_RUNTIME_PYTHON) {
		return false, 0, fmt.Errorf("--deterministic needs the goja or node runtime, not %s", r.Name())
	}
	return d.on, d.seed, nil
}

// parseEnv reads --env K=V flags.
func parseEnv(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want K=V", kv)
		}
		env[k] = v
	}
	return env, nil
}

// maxStdin bounds what run sends as the program's stdin: the request must
// fit in one gRPC message (4 MiB by default), program included.
const maxStdin = 3 << 20

// readStdin reads the program's stdin from path ("-": os.Stdin), at most
// maxStdin bytes.
func readStdin(path string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("read --stdin: %w", err)
	}
	if len(b) > maxStdin {
		return nil, fmt.Errorf("--stdin %s is over %d bytes: the request must fit in one gRPC message", path, maxStdin)
	}
	return b, nil
}

// source returns the program text from -e, a file, or stdin ("-").
func source(code string, args []string) (string, error) {
	switch {
	case code != "" && len(args) > 0:
		return "", errors.New("give either -e CODE or a file, not both")
	case code != "":
		return code, checkText("-e CODE", []byte(code))
	case len(args) == 0:
		return "", errors.New("nothing to run: give a FILE, -e CODE, - for stdin, or --cached NAME")
	}
	b, err := readSource(args[0])
	return string(b), err
}

// maxCode bounds what run and test send of a request's text: a program
// or tests file read (readSource), and its code, tests and stdin
// together (checkRequestBytes). It is what the server's worker takes of
// one request (program.MaxRequestBytes, 4 MiB less 64 KiB, within
// gRPC's 4 MiB message): more could only be refused, by the server or
// by gRPC as "message larger than max", after being read whole.
const maxCode = program.MaxRequestBytes

// readSource reads a program or test file, or standard input for "-": at
// most maxCode+1 bytes, so that /dev/zero or a huge pipe is refused
// after that much, not read into memory until it ends.
func readSource(path string) ([]byte, error) {
	if path == "-" {
		return readCode("standard input", os.Stdin)
	}
	return readCodeFile(path)
}

// readCodeFile reads the file path (a file named "-" too) as readSource
// does.
func readCodeFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCode(path, f)
}

// readCode reads r, named name in errors, as readSource does.
func readCode(name string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCode+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxCode {
		return nil, fmt.Errorf("%s is over %d bytes (4 MiB less 64 KiB), the most code one request carries", name, maxCode)
	}
	return b, checkText(name, b)
}

// checkText refuses code that is not valid UTF-8, naming the offset of
// the first invalid byte: the API carries code as text (a proto3 string),
// and gRPC would refuse the request only while sending it, as INTERNAL.
func checkText(name string, b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	off := 0
	for off < len(b) {
		r, size := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	return fmt.Errorf("%s is not valid UTF-8: byte 0x%02x at offset %d; the API carries code as text (UTF-8), so convert it (iconv -t UTF-8) or write the byte as an escape in the program", name, b[off], off)
}

// checkRequestBytes refuses a request whose parts (named by what gives
// them: "the program", "--stdin") are over maxCode bytes together.
func checkRequestBytes(parts ...requestPart) error {
	total := 0
	for _, p := range parts {
		total += p.bytes
	}
	if total <= maxCode {
		return nil
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" and ")
		}
		fmt.Fprintf(&b, "%s (%d bytes)", p.name, p.bytes)
	}
	return fmt.Errorf("%s are %d bytes together; one request carries at most %d (4 MiB less 64 KiB)", b.String(), total, maxCode)
}

// requestPart is a part of a request for checkRequestBytes.
type requestPart struct {
	name  string
	bytes int
}

// stream runs req with ExecuteStream and copies output as it arrives
// (copyExecuteChunks) to this command's stdout and stderr.
func stream(ctx context.Context, client sandboxv1.SandboxServiceClient, req *sandboxv1.ExecuteRequest, verbose bool) error {
	st, err := client.ExecuteStream(ctx, req)
	if err != nil {
		return err
	}
	return copyExecuteChunks(st, os.Stdout, os.Stderr, verbose)
}

// executeChunks is the receiving side of an ExecuteStream call.
type executeChunks interface {
	Recv() (*sandboxv1.ExecuteChunk, error)
}

// copyExecuteChunks copies the raw output chunks of st to stdout and
// stderr by their stream offsets (chunkWriter: bytes the server dropped
// are marked on stderr, none written twice), then says on stderr what the
// result calls for (printOutcome with verbose, else any truncation, and
// the error of an end other than the program's exit) and returns
// resultExit's error. A write to a closed stdout or stderr is
// exitError{exitPipe}; a stream that ends without a result is a failure.
func copyExecuteChunks(st executeChunks, stdout, stderr io.Writer, verbose bool) error {
	line := new(lineState)
	out := &chunkWriter{name: "stdout", w: stdout, note: stderr, line: line}
	errOut := &chunkWriter{name: "stderr", w: stderr, note: stderr, line: line}
	for {
		chunk, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return failure{errors.New("stream ended without a result")}
			}
			return err
		}
		var werr error
		switch c := chunk.GetChunk().(type) {
		case *sandboxv1.ExecuteChunk_Output:
			werr = out.writeText(chunk.GetStreamOffset(), c.Output)
		case *sandboxv1.ExecuteChunk_ErrorOutput:
			werr = errOut.writeText(chunk.GetStreamOffset(), c.ErrorOutput)
		case *sandboxv1.ExecuteChunk_Result:
			res := c.Result
			out.finish(res.GetOutcome().GetStdoutBytes())
			errOut.finish(res.GetOutcome().GetStderrBytes())
			o := asDelivered(res.GetOutcome(), out, errOut)
			if verbose {
				printOutcome(stderr, res.GetState(), o)
			} else {
				printTruncation(stderr, o)
			}
			success := succeededAsDelivered(res, o)
			if msg := resultError(res); msg != "" && !success {
				fmt.Fprintln(stderr, "execfarm:", msg)
			}
			return resultExit(success, res.GetState(), o)
		}
		if errors.Is(werr, syscall.EPIPE) {
			// Whoever reads our output has gone (| head): stop, and let
			// the deferred clean-up cancel the execution and stop an
			// embedded supervisor.
			return exitError{code: exitPipe}
		}
	}
}

// resultError is what a run's or exec's result calls to say on stderr:
// the server's error when the execution did not succeed and either did
// not end by the program's own exit (a timeout, a limit, a cancel,
// execfarm's failure), or the program could not be started: exit code
// 126 with nothing on its stderr, where the error says why (a working
// directory the sandbox user may not enter: "start program: ...
// permission denied"; supervisor/execution's startFailed). A program
// that exited by itself has its say on its own stderr: "" then.
func resultError(res *sandboxv1.ExecuteResult) string {
	o := res.GetOutcome()
	if res.GetSuccess() || res.GetError() == "" {
		return ""
	}
	if o.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_EXITED ||
		(o.GetExitCode() == exitNotStarted && o.GetStderrBytes() == 0) {
		return res.GetError()
	}
	return ""
}

// resultExit is nil for a successful execution, else the exitError of
// how it ended (exitForResult).
func resultExit(success bool, state sandboxv1.ExecutionState, o *sandboxv1.ExecutionOutcome) error {
	if success {
		return nil
	}
	return exitError{code: exitForResult(success, state, o)}
}

// printOutcome writes to w how an execution ended (state, termination
// reason, exit code, signal), its resource usage, its seed when it was
// deterministic, and any truncation of its output (printTruncation).
func printOutcome(w io.Writer, state sandboxv1.ExecutionState, o *sandboxv1.ExecutionOutcome) {
	u := o.GetUsage()
	fmt.Fprintf(w, "execfarm: execution %s %s (reason %s, exit code %d, signal %d)\n",
		o.GetExecutionId(), state.Name(), o.GetTerminationReason().Name(), o.GetExitCode(), o.GetSignal())
	fmt.Fprintf(w, "execfarm: wall %s, cpu user %s system %s, peak memory %d bytes (%s), pids peak %d, oom kills %d, queued %d ms, sandbox %s\n",
		time.Duration(u.GetWallMs())*time.Millisecond, time.Duration(u.GetCpuUserUs())*time.Microsecond,
		time.Duration(u.GetCpuSystemUs())*time.Microsecond, u.GetPeakMemoryBytes(), u.GetPeakMemorySource(),
		u.GetPidsPeak(), u.GetOomKills(), o.GetQueueWaitMs(), o.GetSandboxId())
	if o.GetDeterministic() {
		fmt.Fprintf(w, "execfarm: deterministic, seed %d\n", o.GetSeed())
	}
	printTruncation(w, o)
}
