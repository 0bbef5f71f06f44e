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

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

func execCmd(cf *clientFlags) *cobra.Command {
	var (
		rt          string
		interactive bool
		workdir     string
		env         map[string]string
		timeout     time.Duration
		verbose     bool
	)
	cmd := &cobra.Command{
		Use:   "exec SANDBOX [flags] -- COMMAND [ARG...]",
		Short: "Run a command in a session sandbox",
		Long: `Run a command in a session sandbox and print its output as it comes.
With the shell runtime (the sandbox's default) a single COMMAND runs as
/bin/sh -c COMMAND, and several words are quoted and joined into one
command line; other runtimes get the words joined by spaces as their
program. The working directory (default /workspace) and its files
persist between execs. Bytes the output limit dropped from the middle of
a stream are marked on stderr where they are missing. The exit status
is the command's exit code, 128+N when signal N ended it, and otherwise
run's: 124 timeout, 130 cancelled, 137 stopped by a limit or output
truncated (the command exited 0 but wrote more than the output limit).

` + exitCodesHelp,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash != 1 {
				return errors.New("usage: execfarm exec SANDBOX [flags] -- COMMAND [ARG...]")
			}
			r, ok := sandboxv1.ParseRuntime(rt)
			if !ok {
				return fmt.Errorf("unknown runtime %q (shell, goja, node, python)", rt)
			}
			req := &execfarmv1.ExecRequest{SandboxId: args[0], Code: commandLine(r, args[1:]), Runtime: r,
				KeepStdinOpen: interactive, Env: env, Workdir: workdir}
			ms, err := millis("--timeout", timeout, 1)
			if err != nil {
				return err
			}
			if ms > 0 {
				req.TimeoutMs = &ms
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cf.sessionCall(func(c sessionClients) error {
				return execStream(ctx, c.sessions, req, interactive, verbose)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&rt, "runtime", "", "shell, goja, node, python (default: the sandbox's)")
	f.BoolVarP(&interactive, "stdin", "i", false, "give this command's standard input to the exec, until its end")
	f.StringVarP(&workdir, "workdir", "w", "", "working directory, absolute or relative to /workspace (default /workspace)")
	f.StringToStringVarP(&env, "env", "e", nil, "environment variable K=V (repeatable)")
	f.DurationVar(&timeout, "timeout", 0, "wall-clock timeout, whole milliseconds, at least 1ms: 30s, 5m; 0 = the sandbox's default")
	f.BoolVarP(&verbose, "verbose", "v", false, "print the termination reason and resource usage to stderr")
	return cmd
}

// commandLine is the exec's code for args: for the shell, one argument as
// it is and several quoted for /bin/sh and joined; for other runtimes the
// arguments joined by spaces.
func commandLine(r sandboxv1.Runtime, args []string) string {
	if len(args) == 1 || (r != sandboxv1.Runtime_RUNTIME_SHELL && r != sandboxv1.Runtime_RUNTIME_UNSPECIFIED) {
		return strings.Join(args, " ")
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// shellQuote quotes s for /bin/sh: as it is when it holds only characters
// no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// execStream runs req with Exec, copies its output as it arrives, feeds
// it this command's stdin with interactive, and returns the exit status
// the command's result calls for.
func execStream(ctx context.Context, c execfarmv1.SessionServiceClient, req *execfarmv1.ExecRequest, interactive, verbose bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closing the call before the result cancels the exec
	st, err := c.Exec(ctx, req)
	if err != nil {
		return err
	}
	stdinErr := make(chan error, 1)
	line := new(lineState)
	out := &chunkWriter{name: "stdout", w: os.Stdout, note: os.Stderr, line: line}
	errOut := &chunkWriter{name: "stderr", w: os.Stderr, note: os.Stderr, line: line}
	for {
		chunk, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the exec's stream ended without a result")
			}
			return err
		}
		var werr error
		switch x := chunk.GetChunk().(type) {
		case *execfarmv1.ExecChunk_Started:
			if interactive {
				go func() { stdinErr <- feedStdin(ctx, c, chunk.GetExecutionId()) }()
			}
		case *execfarmv1.ExecChunk_Stdout:
			werr = out.writeBytes(chunk.GetStreamOffset(), x.Stdout)
		case *execfarmv1.ExecChunk_Stderr:
			werr = errOut.writeBytes(chunk.GetStreamOffset(), x.Stderr)
		case *execfarmv1.ExecChunk_Result:
			res := x.Result
			out.finish(res.GetOutcome().GetStdoutBytes())
			errOut.finish(res.GetOutcome().GetStderrBytes())
			seen := asDelivered(res.GetOutcome(), out, errOut)
			if verbose {
				printOutcome(os.Stderr, res.GetState(), seen)
			} else {
				printTruncation(os.Stderr, seen)
			}
			select {
			case err := <-stdinErr:
				if err != nil {
					fmt.Fprintln(os.Stderr, "execfarm: stdin:", describe(err))
				}
			default:
			}
			if succeededAsDelivered(res, seen) {
				return nil
			}
			return execExit(res)
		}
		if errors.Is(werr, syscall.EPIPE) {
			return exitError{code: 128 + int(syscall.SIGPIPE)}
		}
	}
}

// stdinChunk is what one WriteStdin call carries.
const stdinChunk = 64 << 10

// feedStdin copies this command's standard input to the exec's, then
// closes it. An exec that ends first ends it (its WriteStdin fails).
func feedStdin(ctx context.Context, c execfarmv1.SessionServiceClient, id string) error {
	buf := make([]byte, stdinChunk)
	for {
		n, rerr := os.Stdin.Read(buf)
		if n > 0 {
			if _, err := c.WriteStdin(ctx, &execfarmv1.WriteStdinRequest{ExecutionId: id, Data: buf[:n]}); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			_, err := c.WriteStdin(ctx, &execfarmv1.WriteStdinRequest{ExecutionId: id, Close: true})
			return err
		}
		if rerr != nil {
			return rerr
		}
	}
}

// execExit is the exit status of an exec's result, as run's
// (exitForResult): 0 on success, its exit code, 128+N for signal N, 124 for
// a timeout, 130 for a cancel, 137 for a limit (output past its limit
// included: the server's success is false then, whatever the exit code);
// a reason other than the program's own exit, and a program that could
// not be started, is said on stderr (resultError).
func execExit(res *sandboxv1.ExecuteResult) error {
	o := res.GetOutcome()
	if res.GetSuccess() {
		return nil
	}
	if msg := resultError(res); msg != "" {
		fmt.Fprintln(os.Stderr, "execfarm:", msg)
	}
	return exitError{code: exitForResult(false, res.GetState(), o)}
}
