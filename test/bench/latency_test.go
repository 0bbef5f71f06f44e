//go:build linux

package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// BenchmarkExecuteLatency measures Execute over the unix socket, one call
// at a time, per warm-pool size (pool=0: every execution starts a fresh
// sandbox; pool=N: every call finds a full pool, see timeExecute), against
// baselines taken in the same run: a bare fork+exec+wait
// from Go of the worker binary and of /bin/true, and bwrap running
// /bin/true in fresh namespaces.
func BenchmarkExecuteLatency(b *testing.B) {
	dir := binaries(b)
	for _, setup := range poolSetups {
		pool := setup.size
		b.Run(setup.String(), func(b *testing.B) {
			client := embedded(b, dir, 1, setup)
			for range b.N {
				bareWorker := timeExec("fork+exec+wait execfarm-worker", dir+"/execfarm-worker")
				bareTrue := timeExec("fork+exec+wait /bin/true", "/bin/true")
				rows := []series{bareWorker, bareTrue}
				var bwrap series
				if err := haveBwrap(); err != nil {
					fmt.Printf("bwrap baseline left out: %v\n", err)
				} else {
					bwrap = timeExec("bwrap --unshare-all /bin/true", bwrapArgv...)
					rows = append(rows, bwrap)
				}
				goja := timeExecute(b, client, pool, "Execute goja console.log(1)", sandboxv1.Runtime_RUNTIME_GOJA, "console.log(1)")
				shell := timeExecute(b, client, pool, "Execute shell true", sandboxv1.Runtime_RUNTIME_SHELL, "true")
				rows = append(rows, goja, shell)
				p50 := func(s series) float64 {
					if len(s.d) == 0 {
						return 0
					}
					return float64(s.pct(0.5))
				}
				fmt.Printf("\nlatency, %s (%d runs each)\n%-34s %10s %10s %10s %10s\n",
					setup, samples, "series", "p50", "p99", "p50/true", "p50/bwrap")
				for _, s := range rows {
					fmt.Printf("%-34s %10s %10s %10s %10s\n", s.name, s.pct(0.5).Round(time.Microsecond), s.pct(0.99).Round(time.Microsecond),
						ratio(p50(s), p50(bareTrue)), ratio(p50(s), p50(bwrap)))
				}
				b.ReportMetric(float64(goja.pct(0.5).Microseconds()), "goja-p50-µs")
				b.ReportMetric(float64(goja.pct(0.99).Microseconds()), "goja-p99-µs")
				b.ReportMetric(float64(shell.pct(0.5).Microseconds()), "shell-p50-µs")
				b.ReportMetric(float64(shell.pct(0.99).Microseconds()), "shell-p99-µs")
				b.ReportMetric(p50(shell)/p50(bareTrue), "shell-p50/true")
				if len(bwrap.d) > 0 {
					b.ReportMetric(p50(shell)/p50(bwrap), "shell-p50/bwrap")
				}
			}
		})
	}
}
