package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/proto/execfarmv1"
)

func eventsCmd(cf *clientFlags) *cobra.Command {
	var (
		from   int64
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "events SANDBOX",
		Short: "Print a session sandbox's event log, or follow it",
		Long: `Print a session sandbox's event log from offset --from (default 0), one
event per line: offset, time, kind, details (output chunks quoted, cut to
100 bytes). With --follow, go on with new events as they happen until the
sandbox ends. The log keeps its newest 4096 events; asking for an offset
it dropped fails with the first offset it still holds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from < 0 {
				return fmt.Errorf("--from %d: must not be negative", from)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cf.sessionCall(func(c sessionClients) error {
				if follow {
					st, err := c.sessions.SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: args[0], FromOffset: from})
					if err != nil {
						return err
					}
					for {
						ev, err := st.Recv()
						if errors.Is(err, io.EOF) {
							return nil
						}
						if err != nil {
							return err
						}
						fmt.Println(eventLine(ev))
					}
				}
				for {
					page, err := c.sessions.ReadEvents(ctx, &execfarmv1.ReadEventsRequest{SandboxId: args[0], FromOffset: from, MaxEvents: 1000})
					if err != nil {
						return err
					}
					for _, ev := range page.GetEvents() {
						fmt.Println(eventLine(ev))
					}
					if len(page.GetEvents()) == 0 {
						return nil
					}
					from = page.GetNextOffset()
				}
			})
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "first offset to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing events as they happen, until the sandbox ends")
	return cmd
}

// maxShownData is how much of an output chunk an event line quotes.
const maxShownData = 100

// eventLine renders one event: OFFSET TIME KIND DETAILS.
func eventLine(ev *execfarmv1.SandboxEvent) string {
	head := fmt.Sprintf("%d\t%s\t", ev.GetOffset(), time.UnixMilli(ev.GetTimeMs()).Format("15:04:05.000"))
	switch x := ev.GetEvent().(type) {
	case *execfarmv1.SandboxEvent_Ready:
		return head + "ready"
	case *execfarmv1.SandboxEvent_ExecStarted:
		e := x.ExecStarted
		return head + fmt.Sprintf("exec_started\t%s runtime=%s workdir=%s code=%q", e.GetExecutionId(), e.GetRuntime().Name(), e.GetWorkdir(), e.GetCodePreview())
	case *execfarmv1.SandboxEvent_ExecOutput:
		e := x.ExecOutput
		d := e.GetData()
		shown := strconv.Quote(string(d[:min(len(d), maxShownData)]))
		if len(d) > maxShownData {
			shown += "…"
		}
		return head + fmt.Sprintf("exec_output\t%s %s offset=%d bytes=%d %s", e.GetExecutionId(), e.GetStream().Name(), e.GetStreamOffset(), len(d), shown)
	case *execfarmv1.SandboxEvent_ExecEnded:
		e := x.ExecEnded
		o := e.GetResult().GetOutcome()
		return head + fmt.Sprintf("exec_ended\t%s state=%s reason=%s exit=%d signal=%d wall=%dms", e.GetExecutionId(), e.GetResult().GetState().Name(),
			o.GetTerminationReason().Name(), o.GetExitCode(), o.GetSignal(), o.GetUsage().GetWallMs())
	case *execfarmv1.SandboxEvent_FileWritten:
		return head + fmt.Sprintf("file_written\t%s bytes=%d", x.FileWritten.GetPath(), x.FileWritten.GetSize())
	case *execfarmv1.SandboxEvent_FileRemoved:
		return head + "file_removed\t" + x.FileRemoved.GetPath()
	case *execfarmv1.SandboxEvent_DirectoryMade:
		return head + "directory_made\t" + x.DirectoryMade.GetPath()
	case *execfarmv1.SandboxEvent_Expiring:
		return head + "expiring\treason=" + x.Expiring.GetReason().Name()
	case *execfarmv1.SandboxEvent_Ended:
		e := x.Ended
		return head + fmt.Sprintf("ended\treason=%s cancelled_execs=%d %s", e.GetReason().Name(), e.GetCancelledExecs(), e.GetMessage())
	}
	return head + "unknown"
}
