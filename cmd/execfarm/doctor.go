package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/session"
)

func doctorCmd() *cobra.Command {
	var (
		cgroupParent  string
		uidBase       uint32
		maxConcurrent int
		warmPool      int
		maxSandboxes  int
		allowDegraded []string
		worker        string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Probe this host's isolation layers and say whether the supervisor can start",
		Long: "doctor runs the probe `serve` runs at start: it forks a child into every namespace kind, " +
			"creates a test cgroup in every controller, checks seccomp, the landlock ABI, overlay and the " +
			"uid window, and prints one line per layer. It exits 1 when serve would refuse to start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxConcurrent == 0 {
				maxConcurrent = defaultConcurrency()
			}
			pc, err := hostProbeConfig(cgroup.Config{Parent: cgroupParent, NoPlace: true}, uidBase, maxConcurrent+warmPool+maxSandboxes)
			if err != nil {
				return err
			}
			ok := printDoctor(os.Stdout, probe.Run(pc), allowDegraded)
			if !printBinaries(os.Stdout, worker) {
				ok = false
			}
			if !ok {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cgroupParent, "cgroup-parent", cgroup.DefaultParent, "parent cgroup of sandbox cgroups, as for serve")
	f.Uint32Var(&uidBase, "uid-base", host.DefaultUIDBase, "first host uid of the sandboxes' uid ranges, as for serve")
	f.IntVar(&maxConcurrent, "max-concurrent", 0, "executions running at once, as for serve: sizes the uid window (default: number of CPUs)")
	f.IntVar(&warmPool, "warm-pool", 0, "warm sandboxes, as for serve: sizes the uid window")
	f.IntVar(&maxSandboxes, "max-sandboxes", session.DefaultMaxSandboxes, "session sandboxes, as for serve: sizes the uid window")
	f.StringSliceVar(&allowDegraded, "allow-degraded", nil, "layers serve would be allowed to run without, as for serve")
	f.StringVar(&worker, "worker", "", "execfarm-worker binary, as for serve (env EXECFARM_WORKER)")
	return cmd
}

// printBinaries writes where the worker and goja runtime binaries are, or
// why serve would not find them, and reports whether they are usable.
func printBinaries(w io.Writer, worker string) bool {
	path, err := supervisor.FindWorker(worker)
	if err != nil {
		fmt.Fprintln(w, "binaries: refused:", err)
		return false
	}
	c := sandbox.Config{WorkerBinary: path, GojaBinary: os.Getenv("EXECFARM_GOJA")}
	if err := c.ValidateBinaries(); err != nil {
		fmt.Fprintln(w, "binaries: refused:", err)
		return false
	}
	fmt.Fprintf(w, "binaries: worker %s, goja %s\n", path, c.GojaPath())
	return true
}

// printDoctor writes the layer table, the probe's warnings and the verdict
// to w, and reports whether the supervisor may start.
func printDoctor(w io.Writer, r probe.Report, allowDegraded []string) bool {
	resolved, err := r.Resolve(allowDegraded)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tSTATUS\tDETAIL")
	var degraded []string
	for _, l := range resolved {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Status, l.Detail)
		if l.Status == probe.StatusDegradedAllowed {
			degraded = append(degraded, l.Name)
		}
	}
	tw.Flush()
	for _, warn := range r.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	var me *probe.MissingError
	switch {
	case errors.As(err, &me):
		var items []string
		for _, l := range me.Layers {
			if ok, why := probe.Degradable(l.Name); ok {
				items = append(items, fmt.Sprintf("%s (use --allow-degraded=%s to run without it)", l.Name, l.Name))
			} else {
				items = append(items, fmt.Sprintf("%s (cannot be degraded: %s)", l.Name, why))
			}
		}
		fmt.Fprintln(w, "execfarm cannot start: missing", strings.Join(items, ", "))
		return false
	case err != nil:
		fmt.Fprintln(w, "execfarm cannot start:", err)
		return false
	case len(degraded) > 0:
		fmt.Fprintf(w, "execfarm can isolate on this host, degraded: without %s (--allow-degraded)\n", strings.Join(degraded, ", "))
	default:
		fmt.Fprintln(w, "execfarm can isolate on this host")
	}
	return true
}
