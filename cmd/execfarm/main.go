// Command execfarm is execfarm's single binary: the supervisor (serve),
// the host check (doctor), the client commands (run, test, status, cancel,
// ps, cache, health; sandbox, exec, cp, ls, events for session sandboxes)
// that talk to a supervisor over gRPC, and the MCP bridge (mcp) that
// serves them to AI agents. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
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
		sandboxCmd(&cf), execCmd(&cf), cpCmd(&cf), lsCmd(&cf), eventsCmd(&cf), versionCmd(&cf))
	if err := root.Execute(); err != nil {
		var ee exitError
		if !errors.As(err, &ee) || ee.msg != "" {
			fmt.Fprintln(os.Stderr, "execfarm:", describe(err))
		}
		os.Exit(exitForError(err))
	}
}
