package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/budget"
)

func runtimeNumCPU() int { return runtime.NumCPU() }

func statusCmd(cf *clientFlags) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show an execution's state, output and result",
		Long: `Show an execution's state, its output so far and, once it has ended, how.
The exit status is the execution's, as run's, once it has ended; 0 while it
runs.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			ctx := cmd.Context()
			if wait {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
				defer cancel()
			}
			var stdout, stderr, note io.Writer = os.Stdout, os.Stderr, os.Stderr
			var outBuf, errBuf strings.Builder
			if out.structured() {
				stdout, stderr, note = &outBuf, &errBuf, nil
			}
			resp, err := readExecution(ctx, client, args[0], wait, stdout, stderr, note)
			if err != nil {
				return err
			}
			r := resp.GetResult()
			if out.structured() {
				resp.Output, resp.ErrorOutput = outBuf.String(), errBuf.String()
				if err := printMessage(cmd.OutOrStdout(), *out, resp); err != nil {
					return err
				}
			} else {
				if r == nil {
					// The outcome line below says it once ended.
					fmt.Fprintf(os.Stderr, "execfarm: %s %s", resp.GetExecutionId(), resp.GetState().Name())
					if p := resp.GetQueuePosition(); p > 0 {
						fmt.Fprintf(os.Stderr, " (queue position %d)", p)
					}
					fmt.Fprintln(os.Stderr)
				} else {
					printOutcome(os.Stderr, r.GetState(), r.GetOutcome())
				}
			}
			if r == nil {
				return nil
			}
			return resultExit(r.GetSuccess(), r.GetState(), r.GetOutcome())
		})
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the execution has ended")
	return cmd
}

// readExecution reads execution id's output whole, from offset 0, into
// stdout and stderr, and returns the last page (its state, and its result
// once it has ended); with wait, it waits for the end first. Responses
// carry at most supervisor.MaxOutputBytesPerCall per stream, so it pages
// on while a page comes back full. Where a page crosses the middle of a
// stream dropped past max_output_bytes, a line on note says how many
// bytes were dropped there (chunkWriter's marker); a nil note leaves the
// gap unmarked. Errors: the GetExecution call's, and the writers'.
func readExecution(ctx context.Context, client sandboxv1.SandboxServiceClient, id string, wait bool, stdout, stderr, note io.Writer) (*sandboxv1.GetExecutionResponse, error) {
	if note == nil {
		note = io.Discard
	}
	line := new(lineState)
	out := &chunkWriter{name: "stdout", w: stdout, note: note, line: line}
	errOut := &chunkWriter{name: "stderr", w: stderr, note: note, line: line}
	req := &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: wait}
	for {
		page, err := client.GetExecution(ctx, req)
		if err != nil {
			return nil, err
		}
		if err := out.writePage(req.GetOutputOffset(), page.GetOutput(), page.GetOutputDroppedBytes(), page.GetOutputGapIndex()); err != nil {
			return nil, err
		}
		if err := errOut.writePage(req.GetErrorOutputOffset(), page.GetErrorOutput(), page.GetErrorOutputDroppedBytes(), page.GetErrorOutputGapIndex()); err != nil {
			return nil, err
		}
		full := len(page.GetOutput()) >= supervisor.MaxOutputBytesPerCall-4 || len(page.GetErrorOutput()) >= supervisor.MaxOutputBytesPerCall-4
		if !full {
			return page, nil
		}
		req.OutputOffset, req.ErrorOutputOffset = page.GetOutputLength(), page.GetErrorOutputLength()
	}
}

func cancelCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending or running execution",
		Args:  cobra.ExactArgs(1),
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			resp, err := client.CancelExecution(cmd.Context(), &sandboxv1.CancelExecutionRequest{ExecutionId: args[0]})
			if err != nil {
				return err
			}
			if out.structured() {
				return printMessage(cmd.OutOrStdout(), *out, resp)
			}
			fmt.Fprintln(cmd.OutOrStdout(), resp.GetState().Name())
			if m := resp.GetMessage(); m != "" {
				fmt.Fprintln(os.Stderr, "execfarm:", m)
			}
			return nil
		})
	}
	return cmd
}

func psCmd(cf *clientFlags) *cobra.Command {
	var limit int32
	var all bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List executions, newest first",
		Args:  cobra.NoArgs,
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			req := &sandboxv1.ListExecutionsRequest{Limit: limit}
			if !all {
				req.States = []sandboxv1.ExecutionState{sandboxv1.ExecutionState_EXECUTION_STATE_PENDING, sandboxv1.ExecutionState_EXECUTION_STATE_RUNNING}
			}
			resp, err := client.ListExecutions(cmd.Context(), req)
			if err != nil {
				return err
			}
			if out.structured() {
				return printMessage(cmd.OutOrStdout(), *out, resp)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATE\tREASON\tRUNTIME\tSUBMITTED\tCODE")
			for _, e := range resp.GetExecutions() {
				reason := cmp.Or(e.GetTerminationReason().Name(), "-")
				rt := e.GetRuntime().Name()
				preview := strings.ReplaceAll(e.GetCodePreview(), "\n", " ")
				if len(preview) > 40 {
					preview = preview[:40] + "…"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.GetExecutionId(), e.GetState().Name(), reason, rt,
					time.UnixMilli(e.GetStartedAtMs()).Format(time.TimeOnly), preview)
			}
			return w.Flush()
		})
	}
	cmd.Flags().Int32Var(&limit, "limit", 20, "show at most this many (0 = all)")
	cmd.Flags().BoolVarP(&all, "all", "a", false, "include finished executions")
	return cmd
}

// memoryLine is health's line for the node's memory budget: "memory
// budget: 768Mi held of 1Gi (256Mi free)", or "memory budget: not
// reported" when resp has none (a server that predates the field).
func memoryLine(resp *sandboxv1.HealthCheckResponse) string {
	total, held := resp.GetMemoryBudgetBytes(), resp.GetMemoryHeldBytes()
	if total <= 0 {
		return "memory budget: not reported"
	}
	return fmt.Sprintf("memory budget: %s held of %s (%s free)", budget.Format(held), budget.Format(total), budget.Format(total-held))
}

func healthCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Ask the supervisor whether it is healthy and which isolation layers are active",
		Long: `Ask the supervisor whether it is healthy, its load, the node's memory budget
(what live sandboxes hold of it), warm pool and isolation layers. The exit status is 0 when it is healthy, 127 when none answers or it
is not healthy (shutting down, or its fork server unavailable), the reason on stderr.`,
		Args: cobra.NoArgs,
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return cf.call(func(client sandboxv1.SandboxServiceClient) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			resp, err := client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
			if err != nil {
				return err
			}
			if out.structured() {
				if err := printMessage(cmd.OutOrStdout(), *out, resp); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "healthy: %v\nversion: %s\ndefault runtime: %s\nrunning: %d\nqueued: %d\nwarm pool: %d ready, %d starting, %d in use, size %d\n%s\nkubernetes context: %q\n",
					resp.GetHealthy(), resp.GetVersion(), resp.GetDefaultRuntime(), resp.GetRunning(), resp.GetQueued(),
					resp.GetWarmPoolReady(), resp.GetWarmPoolStarting(), resp.GetWarmPoolInUse(), resp.GetWarmPoolSize(),
					memoryLine(resp), resp.GetKubernetesContext())
				for _, l := range resp.GetLayers() {
					fmt.Fprintf(w, "layer %-18s available=%-5v active=%-5v %s\n", l.GetName(), l.GetAvailable(), l.GetActive(), l.GetDetail())
				}
			}
			if !resp.GetHealthy() {
				return exitError{code: exitUnreachable, msg: unhealthyMessage(resp)}
			}
			return nil
		})
	}
	return cmd
}

// unhealthyMessage says why HealthCheck found the supervisor unhealthy,
// in its own words (unhealthy_reason), which a supervisor before that
// field does not give.
func unhealthyMessage(resp *sandboxv1.HealthCheckResponse) string {
	if r := resp.GetUnhealthyReason(); r != "" {
		return "the supervisor is not healthy: " + r
	}
	return "the supervisor is not healthy"
}
