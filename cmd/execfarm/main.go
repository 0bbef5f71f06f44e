// Command execfarm is execfarm's single binary: the supervisor (serve),
// the host check (doctor), the client commands (run, test, status, cancel,
// ps, cache, health; sandbox, exec, cp, mv, ls, events for session sandboxes)
// that talk to a supervisor over gRPC, and the MCP bridge (mcp) that
// serves them to AI agents. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// A write to a closed stdout (execfarm run | head, an MCP host that
	// went away) returns EPIPE instead of killing the process, so that an
	// embedded supervisor is shut down and nothing is left behind. A
	// handler, not SIG_IGN: ignored signals are inherited across exec, and
	// sandboxed programs must get the default SIGPIPE.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	root := rootCmd()
	if err := root.Execute(); err != nil {
		var ee exitError
		if !errors.As(err, &ee) || ee.msg != "" {
			fmt.Fprintln(os.Stderr, "execfarm:", describe(err))
		}
		os.Exit(exitForError(err))
	}
}

// rootCmd is the command tree.
func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "execfarm",
		Short:         "Process-isolated code execution: every program in a fresh Linux sandbox",
		Long:          "Process-isolated code execution: every program in a fresh Linux sandbox.\n\n" + exitCodesHelp,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var cf clientFlags
	cf.register(root)
	root.AddCommand(serveCmd(), doctorCmd(), runCmd(&cf), statusCmd(&cf), cancelCmd(&cf), psCmd(&cf), healthCmd(&cf), mcpCmd(&cf), testCmd(&cf), cacheCmd(&cf),
		sandboxCmd(&cf), execCmd(&cf), cpCmd(&cf), mvCmd(&cf), lsCmd(&cf), eventsCmd(&cf), versionCmd(&cf))
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group below root (a
// command with subcommands) refuse a command it lacks, naming it, and
// refuse being called without one (exit 126, exitRefused): cobra would
// print the group's help and exit 0, so that a script calling a command
// this version lacks would believe it succeeded. The root refuses
// unknown commands itself.
func refuseUnknownSubcommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c == root || !c.HasSubCommands() {
			return
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			var names []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			if len(args) == 0 {
				return fmt.Errorf("%s needs a command: %s (see %s --help)", c.CommandPath(), strings.Join(names, ", "), c.CommandPath())
			}
			msg := fmt.Sprintf("unknown command %q for %q (commands: %s)", args[0], c.CommandPath(), strings.Join(names, ", "))
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return errors.New(msg)
		}
	}
	walk(root)
}
