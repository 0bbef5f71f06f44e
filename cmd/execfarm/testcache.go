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
		rt        string
		code      string
		timeoutMs int32
	)
	cmd := &cobra.Command{
		Use:   "test [flags] (TESTS_FILE | -)",
		Short: "Run uvu tests (test, assert) against code in a fresh sandbox and report each test",
		Long: `Run TESTS_FILE (uvu's test and assert are globals) after the code of
--code FILE, in test mode (goja or node), and print one line per test.
The exit status is 0 when every test passed, 1 otherwise. Like run, it
starts an embedded supervisor when none is configured.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tests, err := readSource(args[0])
			if err != nil {
				return err
			}
			r, ok := sandboxv1.ParseRuntime(rt)
			if !ok {
				return fmt.Errorf("unknown runtime %q (goja, node)", rt)
			}
			req := &sandboxv1.ExecuteTestRequest{Tests: string(tests), Runtime: r, RawOutput: true}
			if code != "" {
				b, err := os.ReadFile(code)
				if err != nil {
					return err
				}
				req.Code = new(string(b))
			}
			if timeoutMs != 0 { // the server refuses a negative one
				req.TimeoutMs = &timeoutMs
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
				return err
			}
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
			if !resp.GetSuccess() {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&code, "code", "", "file of the code under test, run before the tests")
	f.StringVar(&rt, "runtime", "", "goja or node (default: the server's)")
	f.Int32Var(&timeoutMs, "timeout", 0, "wall-clock timeout in ms (default: the server's, 30000)")
	return cmd
}

func cacheCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List or clear the supervisor's script cache",
	}
	list := &cobra.Command{
		Use:   "list [FILTER]",
		Short: "List cached scripts, newest first; FILTER matches names and descriptions",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.call(func(client sandboxv1.SandboxServiceClient) error {
				req := &sandboxv1.ListCacheRequest{}
				if len(args) == 1 {
					req.Filter = &args[0]
				}
				resp, err := client.ListCache(cmd.Context(), req)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tCREATED\tDESCRIPTION")
				for _, e := range resp.GetEntries() {
					fmt.Fprintf(w, "%s\t%s\t%s\n", e.GetName(), time.UnixMilli(e.GetCreatedAtMs()).Format(time.DateTime), e.GetDescription())
				}
				return w.Flush()
			})
		},
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Delete every cached script",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.call(func(client sandboxv1.SandboxServiceClient) error {
				resp, err := client.ClearCache(cmd.Context(), &sandboxv1.ClearCacheRequest{})
				if err != nil {
					return err
				}
				fmt.Printf("deleted %d\n", resp.GetDeletedCount())
				return nil
			})
		},
	}
	cmd.AddCommand(list, clear)
	return cmd
}
