package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/client"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// sessionClients are the clients of a configured supervisor that the
// session commands use: session sandboxes live in a server, never in an
// embedded supervisor that would end with the command.
type sessionClients struct {
	sessions execfarmv1.SessionServiceClient
	execs    sandboxv1.SandboxServiceClient
}

// sessionCall runs f with clients of the configured supervisor (the
// default socket when nothing is configured), then closes the
// connection. Its errors and f's go through reach, as run's do: no
// supervisor at the address is an *unreachableError, which says how to
// start one or point at one.
func (c *clientFlags) sessionCall(f func(sessionClients) error) error {
	cl, err := c.open(context.Background(), client.Server)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := f(sessionClients{cl.Sessions(), cl.Executions()}); err != nil {
		return reach(cl.Transport(), err)
	}
	return nil
}

// sandboxCmd is `execfarm sandbox`: create, ls, status, extend, rm.
func sandboxCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Create, list, inspect and delete session sandboxes",
		Long: `A session sandbox lives across many execs and file copies until it is
deleted or expires. Run commands in it with execfarm exec, move files with
execfarm cp, rename them with execfarm mv, list them with execfarm ls, follow its event log with
execfarm events. It belongs to the principal that created it (its bearer
token's name, its client certificate, or the local caller).`,
	}
	cmd.AddCommand(sandboxCreateCmd(cf), sandboxListCmd(cf), sandboxStatusCmd(cf), sandboxExtendCmd(cf), sandboxRemoveCmd(cf))
	return cmd
}

func sandboxCreateCmd(cf *clientFlags) *cobra.Command {
	var (
		ttl, idle time.Duration
		labels    map[string]string
		rt        string
		lim       limitFlags
	)
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create a session sandbox and print its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, ok := sandboxv1.ParseRuntime(rt)
			if !ok {
				return fmt.Errorf("unknown runtime %q (shell, goja, node, python)", rt)
			}
			limits, err := lim.proto()
			if err != nil {
				return err
			}
			req := &execfarmv1.CreateSandboxRequest{Runtime: r, Limits: limits, Labels: labels}
			if cmd.Flags().Changed("ttl") {
				if err := wholeSeconds("--ttl", ttl, ", 0 for no expiry"); err != nil {
					return err
				}
				s := int64(ttl / time.Second)
				req.ShutdownAfterSeconds = &s
			}
			if idle != 0 {
				if err := wholeSeconds("--idle-timeout", idle, ""); err != nil {
					return err
				}
				s := int64(idle / time.Second)
				req.IdleTimeoutSeconds = &s
			}
			return cf.sessionCall(func(c sessionClients) error {
				sb, err := c.sessions.CreateSandbox(cmd.Context(), req)
				if err != nil {
					return err
				}
				fmt.Println(sb.GetSandboxId())
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.DurationVar(&ttl, "ttl", 0, "lifetime: 10m, 2h; 0 = no expiry, if the server allows it (default: the server's, 5m)")
	f.DurationVar(&idle, "idle-timeout", 0, "end the sandbox after this long with no exec running and no file copied (default: never)")
	f.StringToStringVarP(&labels, "label", "l", nil, "label K=V, for sandbox ls --label (repeatable)")
	f.StringVar(&rt, "runtime", "", "runtime of execs that name none: shell, goja, node, python (default shell)")
	lim.register(f, "the sandbox (all its execs together)")
	return cmd
}

// wholeSeconds checks a duration flag that the request carries in
// seconds: not negative, and whole seconds (the error then adds hint).
func wholeSeconds(flag string, d time.Duration, hint string) error {
	if d < 0 {
		return fmt.Errorf("%s %v: must not be negative", flag, d)
	}
	if d%time.Second != 0 {
		return fmt.Errorf("%s %v: want whole seconds%s", flag, d, hint)
	}
	return nil
}

func sandboxListCmd(cf *clientFlags) *cobra.Command {
	var labels map[string]string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your session sandboxes and your clients' (an MCP bridge's, OWNER client:ID@...), oldest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cf.sessionCall(func(c sessionClients) error {
				resp, err := c.sessions.ListSandboxes(cmd.Context(), &execfarmv1.ListSandboxesRequest{Labels: labels})
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tSTATUS\tRUNTIME\tEXECS\tCREATED\tEXPIRES\tOWNER\tLABELS")
				for _, sb := range resp.GetSandboxes() {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", sb.GetSandboxId(), sb.GetState().Name(), cmp.Or(sb.GetRuntime().Name(), "shell"),
						sb.GetRunningExecs(), ago(sb.GetCreatedAtMs()), expiry(sb.GetExpiresAtMs()), sb.GetOwner(), labelText(sb.GetLabels()))
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringToStringVarP(&labels, "label", "l", nil, "only sandboxes with label K=V (repeatable: all of them)")
	return cmd
}

func sandboxStatusCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status SANDBOX",
		Short: "Show a session sandbox's status: SandboxReady, SandboxNotReady or SandboxNotFound",
		Long: `Show a session sandbox's status. The exit status is 0 when it is ready,
1 when it is not ready or not found.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.sessionCall(func(c sessionClients) error {
				sb, err := c.sessions.GetSandbox(cmd.Context(), &execfarmv1.GetSandboxRequest{SandboxId: args[0]})
				if err != nil {
					return err
				}
				printSandbox(sb)
				if !sb.GetReady() {
					return exitError{code: 1}
				}
				return nil
			})
		},
	}
}

func printSandbox(sb *execfarmv1.Sandbox) {
	fmt.Printf("sandbox: %s\nstatus: %s\nready: %v\n", sb.GetSandboxId(), sb.GetState().Name(), sb.GetReady())
	if m := sb.GetMessage(); m != "" {
		fmt.Printf("message: %s\n", m)
	}
	if sb.GetState() == execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND {
		return
	}
	l, u := sb.GetLimits(), sb.GetUsage()
	fmt.Printf("owner: %s\nruntime: %s\nlabels: %s\ncreated: %s (%s ago)\nexpires: %s\n",
		sb.GetOwner(), cmp.Or(sb.GetRuntime().Name(), "shell"), labelText(sb.GetLabels()),
		time.UnixMilli(sb.GetCreatedAtMs()).Format(time.RFC3339), ago(sb.GetCreatedAtMs()), expiry(sb.GetExpiresAtMs()))
	if s := sb.GetIdleTimeoutSeconds(); s > 0 {
		fmt.Printf("idle timeout: %s (last activity %s ago)\n", time.Duration(s)*time.Second, ago(sb.GetLastActivityMs()))
	}
	fmt.Printf("running execs: %d\nevents: offsets %d to %d\n", sb.GetRunningExecs(), sb.GetFirstEventOffset(), sb.GetNextEventOffset()-1)
	fmt.Printf("limits: memory %d bytes, cpu %d%%, pids %d, open files %d, workspace %d bytes; per exec: timeout %d ms, output %d bytes per stream\n",
		l.GetMaxMemoryBytes(), l.GetMaxCpuPercent(), l.GetMaxProcesses(), l.GetMaxFileDescriptors(), l.GetWorkspaceBytes(), l.GetTimeoutMs(), l.GetMaxOutputBytes())
	fmt.Printf("usage: cpu user %s system %s, peak memory %d bytes (%s), pids peak %d, oom kills %d\n",
		time.Duration(u.GetCpuUserUs())*time.Microsecond, time.Duration(u.GetCpuSystemUs())*time.Microsecond,
		u.GetPeakMemoryBytes(), u.GetPeakMemorySource(), u.GetPidsPeak(), u.GetOomKills())
}

func sandboxRemoveCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm SANDBOX...",
		Aliases: []string{"delete"},
		Short:   "Delete session sandboxes (yours or your clients'): their running execs are cancelled and everything in them is destroyed",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.sessionCall(func(c sessionClients) error {
				failed := 0
				for _, id := range args {
					if _, err := c.sessions.DeleteSandbox(cmd.Context(), &execfarmv1.DeleteSandboxRequest{SandboxId: id}); err != nil {
						fmt.Fprintln(os.Stderr, "execfarm:", describe(err))
						failed++
						continue
					}
					fmt.Println(id)
				}
				if failed > 0 {
					return exitError{code: 1}
				}
				return nil
			})
		},
	}
}

// ago renders the time since a Unix-milliseconds instant, to the second.
func ago(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.Since(time.UnixMilli(ms)).Round(time.Second).String()
}

// expiry renders an expiry time as "in 4m30s", or "never".
func expiry(ms int64) string {
	if ms == 0 {
		return "never"
	}
	d := time.Until(time.UnixMilli(ms)).Round(time.Second)
	if d < 0 {
		return "now"
	}
	return "in " + d.String()
}

// labelText renders labels as k=v,k=v sorted by key, "-" for none.
func labelText(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
