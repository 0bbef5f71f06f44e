package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

func runCmd(cf *clientFlags) *cobra.Command {
	var (
		rt        string
		timeoutMs int64
		memory    int64
		code      string
		async     bool
		verbose   bool
		stdinFrom string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] (FILE | -e CODE | -)",
		Short: "Run a program in a fresh sandbox and print its output",
		Long: `Run a program in a fresh sandbox. Its stdout and stderr are printed as they
arrive; the exit status is 0 when the execution succeeded, the program's
exit code when it exited with one, and 1 otherwise (killed, timed out).
With no supervisor configured (flags or SANDBOX_* variables) and none at the
default socket, run starts an embedded supervisor for the one execution.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := source(code, args)
			if err != nil {
				return err
			}
			r, ok := sandboxv1.ParseRuntime(rt)
			if !ok {
				return fmt.Errorf("unknown runtime %q (goja, node, shell, python)", rt)
			}
			// Raw output: the program's stdout and stderr as it wrote them.
			req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: src}, Runtime: r, RawOutput: true}
			if stdinFrom != "" {
				if stdinFrom == "-" && len(args) > 0 && args[0] == "-" {
					return errors.New("--stdin - and a program read from - both want standard input")
				}
				if req.Stdin, err = readStdin(stdinFrom); err != nil {
					return err
				}
			}
			if timeoutMs != 0 || memory != 0 { // the server refuses negative ones
				req.Limits = &sandboxv1.ResourceLimits{TimeoutMs: timeoutMs, MaxMemoryBytes: memory}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			client, closeFn, err := cf.connectOrEmbed(ctx, verbose)
			if err != nil {
				return err
			}
			defer closeFn()
			if async {
				resp, err := client.ExecuteAsync(ctx, req)
				if err != nil {
					return err
				}
				fmt.Println(resp.GetExecutionId())
				return nil
			}
			return stream(ctx, client, req, verbose)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rt, "runtime", "", "goja (TypeScript/JavaScript), shell, python, node (default: the server's)")
	f.Int64Var(&timeoutMs, "timeout", 0, "wall-clock timeout in ms (default: the server's, 30000)")
	f.Int64Var(&memory, "memory", 0, "memory limit in bytes (default: the server's, 512 MiB)")
	f.StringVarP(&code, "eval", "e", "", "run CODE instead of a file")
	f.BoolVar(&async, "async", false, "submit and print the execution id")
	f.BoolVarP(&verbose, "verbose", "v", false, "print the termination reason and resource usage to stderr")
	f.StringVar(&stdinFrom, "stdin", "", "give the program FILE, or - for this command's standard input, as its standard input (at most 3 MiB; default: none)")
	return cmd
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
		return code, nil
	case len(args) == 0:
		return "", errors.New("nothing to run: give a FILE, -e CODE, or - for stdin")
	}
	b, err := readSource(args[0])
	return string(b), err
}

// readSource reads a program or test file, or standard input for "-".
func readSource(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// stream runs req with ExecuteStream and copies output as it arrives.
func stream(ctx context.Context, client sandboxv1.SandboxServiceClient, req *sandboxv1.ExecuteRequest, verbose bool) error {
	st, err := client.ExecuteStream(ctx, req)
	if err != nil {
		return err
	}
	for {
		chunk, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("stream ended without a result")
			}
			return err
		}
		var werr error
		switch c := chunk.GetChunk().(type) {
		case *sandboxv1.ExecuteChunk_Output:
			_, werr = os.Stdout.WriteString(c.Output)
		case *sandboxv1.ExecuteChunk_ErrorOutput:
			_, werr = os.Stderr.WriteString(c.ErrorOutput)
		case *sandboxv1.ExecuteChunk_Result:
			res := c.Result
			if verbose {
				printOutcome(res.GetState(), res.GetOutcome())
			}
			if !res.GetSuccess() {
				if o := res.GetOutcome(); o.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_EXITED && res.GetError() != "" {
					fmt.Fprintln(os.Stderr, "execfarm:", res.GetError())
				}
				code := int(res.GetOutcome().GetExitCode())
				if code <= 0 || code > 255 {
					code = 1
				}
				return exitError{code: code}
			}
			return nil
		}
		if errors.Is(werr, syscall.EPIPE) {
			// Whoever reads our output has gone (| head): stop, and let
			// the deferred clean-up cancel the execution and stop an
			// embedded supervisor; 141 is a shell's status for SIGPIPE.
			return exitError{code: 128 + int(syscall.SIGPIPE)}
		}
	}
}

func printOutcome(state sandboxv1.ExecutionState, o *sandboxv1.ExecutionOutcome) {
	u := o.GetUsage()
	fmt.Fprintf(os.Stderr, "execfarm: execution %s %s (reason %s, exit code %d, signal %d)\n",
		o.GetExecutionId(), state.Name(), o.GetTerminationReason().Name(), o.GetExitCode(), o.GetSignal())
	fmt.Fprintf(os.Stderr, "execfarm: wall %s, cpu user %s system %s, peak memory %d bytes (%s), pids peak %d, oom kills %d, queued %d ms, sandbox %s\n",
		time.Duration(u.GetWallMs())*time.Millisecond, time.Duration(u.GetCpuUserUs())*time.Microsecond,
		time.Duration(u.GetCpuSystemUs())*time.Microsecond, u.GetPeakMemoryBytes(), u.GetPeakMemorySource(),
		u.GetPidsPeak(), u.GetOomKills(), o.GetQueueWaitMs(), o.GetSandboxId())
}
