package main

import (
	"context"
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
sandbox ends. The log keeps its newest 4096 events: from 0 (the start)
it prints from the oldest it holds, saying on stderr which were pruned;
asking for a later offset it dropped fails with the first offset it
still holds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from < 0 {
				return fmt.Errorf("--from %d: must not be negative", from)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cf.sessionCall(func(c sessionClients) error {
				return printEvents(ctx, c.sessions, args[0], from, follow, os.Stdout, os.Stderr)
			})
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "first offset to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing events as they happen, until the sandbox ends")
	return cmd
}

// printEvents prints sandbox id's events from offset from to stdout, one
// eventLine each: the pages of ReadEvents up to the end, or with follow
// SubscribeEvents until the sandbox's last event. From 0, when the log's
// bound pruned its oldest events (the first event's offset is past 0), a
// line on stderr says which before the first event. Errors are the
// calls'.
func printEvents(ctx context.Context, c execfarmv1.SessionServiceClient, id string, from int64, follow bool, stdout, stderr io.Writer) error {
	first := true
	show := func(ev *execfarmv1.SandboxEvent) {
		if first && from == 0 && ev.GetOffset() > 0 {
			fmt.Fprintf(stderr, "execfarm: events 0 to %d were pruned (the log keeps its newest events); from %d on:\n", ev.GetOffset()-1, ev.GetOffset())
		}
		first = false
		fmt.Fprintln(stdout, eventLine(ev))
	}
	if follow {
		st, err := c.SubscribeEvents(ctx, &execfarmv1.SubscribeEventsRequest{SandboxId: id, FromOffset: from})
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
			show(ev)
		}
	}
	for next := from; ; {
		page, err := c.ReadEvents(ctx, &execfarmv1.ReadEventsRequest{SandboxId: id, FromOffset: next, MaxEvents: 1000})
		if err != nil {
			return err
		}
		for _, ev := range page.GetEvents() {
			show(ev)
		}
		if len(page.GetEvents()) == 0 {
			return nil
		}
		next = page.GetNextOffset()
	}
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
