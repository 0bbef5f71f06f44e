package main

import (
	"bytes"
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
	"github.com/execfarm/execfarm/supervisor/limits"
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
		out           *outputFormat
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
			report := probe.Run(pc)
			// Said here and at serve's start, not on every embedded run.
			for _, n := range supervisor.HostCeilingNotes(limits.DefaultCeilings()) {
				report.Warnings = append(report.Warnings, n.String())
			}
			var verdict, binaries bytes.Buffer
			ok := printDoctor(&verdict, report, allowDegraded)
			if !printBinaries(&binaries, worker) {
				ok = false
			}
			if out.structured() {
				if err := printValue(cmd.OutOrStdout(), *out, doctorReport(report, allowDegraded, verdict.String(), binaries.String(), ok)); err != nil {
					return err
				}
			} else {
				_, _ = verdict.WriteTo(cmd.OutOrStdout())
				_, _ = binaries.WriteTo(cmd.OutOrStdout())
			}
			if !ok {
				return exitError{code: 1}
			}
			return nil
		},
	}
	out = addOutputFlag(cmd)
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

// doctorJSON is `doctor -o json`: the layers, the probe's warnings, the
// binaries serve would use, whether serve may start, and why.
type doctorJSON struct {
	Layers   []doctorLayer `json:"layers"`
	Warnings []string      `json:"warnings"`
	Binaries string        `json:"binaries"`
	CanStart bool          `json:"canStart"`
	Verdict  string        `json:"verdict"`
}

// doctorLayer is one layer: status ok, missing, degraded-allowed or info.
type doctorLayer struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	Available bool   `json:"available"`
	Required  bool   `json:"required"`
	Active    bool   `json:"active"`
	Detail    string `json:"detail"`
}

// doctorReport builds doctorJSON from the probe's report and the text
// printDoctor and printBinaries wrote (their last lines are the verdicts).
func doctorReport(r probe.Report, allowDegraded []string, verdict, binaries string, ok bool) doctorJSON {
	resolved, _ := r.Resolve(allowDegraded)
	d := doctorJSON{Warnings: r.Warnings, CanStart: ok, Binaries: strings.TrimSpace(binaries),
		Verdict: lastLine(verdict), Layers: []doctorLayer{}}
	if d.Warnings == nil {
		d.Warnings = []string{}
	}
	for _, l := range resolved {
		d.Layers = append(d.Layers, doctorLayer{Name: l.Name, Status: string(l.Status), Available: l.Available,
			Required: l.Required, Active: l.Active, Detail: l.Detail})
	}
	return d
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
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
