package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

func testCmd(cf *clientFlags) *cobra.Command {
	var (
		rt   string
		code string
		lim  limitFlags
		det  deterministicFlags
	)
	cmd := &cobra.Command{
		Use:   "test [flags] (TESTS_FILE | -)",
		Short: "Run uvu tests (test, assert) against code in a fresh sandbox and report each test",
		Long: `Run TESTS_FILE (uvu's test and assert are globals) after the code of
--code FILE, in test mode (goja or node), and print one line per test.
The exit status is 0 when every test passed, 1 when one failed. Like run,
it starts an embedded supervisor when none is configured.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		tests, err := readSource(args[0])
		if err != nil {
			return err
		}
		r, ok := sandboxv1.ParseRuntime(rt)
		if !ok {
			return fmt.Errorf("unknown runtime %q (goja, node)", rt)
		}
		req := &sandboxv1.ExecuteTestRequest{Tests: string(tests), Runtime: r, RawOutput: true}
		if req.Deterministic, req.Seed, err = det.get(cmd.Flags(), r); err != nil {
			return err
		}
		if code != "" {
			b, err := readCodeFile(code)
			if err != nil {
				return err
			}
			req.Code = new(string(b))
			if err := checkRequestBytes(requestPart{"the tests", len(tests)}, requestPart{"--code", len(b)}); err != nil {
				return err
			}
		}
		if req.Limits, err = lim.proto(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		client, closeFn, err := cf.connectOrEmbed(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		resp, err := client.ExecuteTest(ctx, req)
		if err != nil {
			return cf.reach(err)
		}
		if out.structured() {
			if err := printMessage(cmd.OutOrStdout(), *out, resp); err != nil {
				return err
			}
		} else {
			printTests(resp)
		}
		if !resp.GetSuccess() {
			// A test failed (1), or the run ended otherwise (timeout,
			// limit...): that end's status.
			o := resp.GetOutcome()
			if o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED {
				return exitError{code: 1}
			}
			return exitError{code: exitForResult(false, sandboxv1.ExecutionState_EXECUTION_STATE_UNSPECIFIED, o)}
		}
		return nil
	}
	f := cmd.Flags()
	f.StringVar(&code, "code", "", "file of the code under test, run before the tests")
	f.StringVar(&rt, "runtime", "", "goja or node (default: the server's)")
	lim.register(f, "the execution")
	det.register(f)
	return cmd
}

// printTests writes a test run for a person: the program's output to
// stderr, one line per test and the counts to stdout.
func printTests(resp *sandboxv1.ExecuteTestResponse) {
	os.Stderr.WriteString(resp.GetOutput())
	os.Stderr.WriteString(resp.GetErrorOutput())
	for _, t := range resp.GetTests() {
		mark := "ok  "
		switch {
		case t.GetSkipped():
			mark = "skip"
		case !t.GetPassed():
			mark = "FAIL"
		}
		fmt.Printf("%s %s (%d ms)\n", mark, t.GetName(), t.GetDurationMs())
		if e := t.GetError(); e != "" {
			fmt.Printf("     %s\n", strings.ReplaceAll(strings.TrimRight(e, "\n"), "\n", "\n     "))
		}
	}
	s := resp.GetSummary()
	fmt.Printf("%d passed, %d failed, %d skipped\n", s.GetPassed(), s.GetFailed(), s.GetSkipped())
	if e := resp.GetError(); e != "" {
		fmt.Fprintln(os.Stderr, "execfarm:", e)
	}
}

func cacheCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache (list [FILTER] | clear)",
		Short: "List or clear the supervisor's script cache",
	}
	list := &cobra.Command{
		Use:   "list [FILTER]",
		Short: "List cached scripts, newest first; FILTER matches names and descriptions",
		Args:  cobra.MaximumNArgs(1),
	}
	listOut := addOutputFlag(list)
	list.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			req := &sandboxv1.ListCacheRequest{}
			if len(args) == 1 {
				req.Filter = &args[0]
			}
			resp, err := client.ListCache(cmd.Context(), req)
			if err != nil {
				return err
			}
			if listOut.structured() {
				return printMessage(cmd.OutOrStdout(), *listOut, resp)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tCREATED\tDESCRIPTION")
			for _, e := range resp.GetEntries() {
				fmt.Fprintf(w, "%s\t%s\t%s\n", e.GetName(), time.UnixMilli(e.GetCreatedAtMs()).Format(time.DateTime), e.GetDescription())
			}
			return w.Flush()
		})
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Delete every cached script",
		Args:  cobra.NoArgs,
	}
	clearOut := addOutputFlag(clear)
	clear.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			resp, err := client.ClearCache(cmd.Context(), &sandboxv1.ClearCacheRequest{})
			if err != nil {
				return err
			}
			if clearOut.structured() {
				return printMessage(cmd.OutOrStdout(), *clearOut, resp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d\n", resp.GetDeletedCount())
			return nil
		})
	}
	cmd.AddCommand(list, clear)
	return cmd
}
