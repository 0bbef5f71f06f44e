//go:build linux

package bench

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

const (
	// clients is how many callers run executions at once.
	clients = 8
	// throughputFor is how long the execfarm series runs; baselines run
	// baselineFor.
	throughputFor = 20 * time.Second
	baselineFor   = 2 * time.Second
)

// rate runs fn from clients goroutines for d and returns completed calls
// per second; the first error stops the run.
func rate(d time.Duration, fn func() error) (float64, error) {
	var n atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && first.Load() == nil {
				if err := fn(); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// BenchmarkThroughput measures executions per second of shell `true` with
// 8 concurrent clients for 20 s, single-use sandboxes (one per execution),
// per warm-pool size, against 8 concurrent bare fork+exec+wait loops of
// /bin/true and of bwrap /bin/true. The supervisor runs NumCPU slots, its
// default.
// With pool=4,reuse=1000 sandboxes are reset and reused, not started. The
// last series, "slots=2xCPU", runs single-use sandboxes with twice the
// default slots: a sandbox's start-up sleeps part of the time (RCU grace
// periods of cgroup placement, the go-plugin handshake), so the default
// (one slot per CPU) leaves CPU idle.
func BenchmarkThroughput(b *testing.B) {
	dir := binaries(b)
	type config struct {
		setup poolSetup
		slots int
	}
	all := []config{}
	for _, s := range poolSetups {
		all = append(all, config{s, runtime.NumCPU()})
	}
	all = append(all, config{poolSetup{0, 1}, 2 * runtime.NumCPU()})
	for _, sr := range all {
		setup, slots := sr.setup, sr.slots
		name := setup.String()
		if slots != runtime.NumCPU() {
			name += ",slots=2xCPU"
		}
		b.Run(name, func(b *testing.B) {
			client := embedded(b, dir, slots, setup)
			for range b.N {
				bare, err := rate(baselineFor, func() error { return exec.Command("/bin/true").Run() })
				if err != nil {
					b.Fatal(err)
				}
				var bw float64
				if err := haveBwrap(); err != nil {
					fmt.Printf("bwrap baseline left out: %v\n", err)
				} else if bw, err = rate(baselineFor, func() error { return exec.Command(bwrapArgv[0], bwrapArgv[1:]...).Run() }); err != nil {
					b.Fatal(err)
				}
				req := codeReq(sandboxv1.Runtime_RUNTIME_SHELL, "true")
				ef, err := rate(throughputFor, func() error {
					resp, err := client.Execute(context.Background(), req)
					if err == nil && !resp.GetSuccess() {
						err = fmt.Errorf("execution failed: %v", resp)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
				fmt.Printf("\nthroughput, %d clients, %s, %d slots\n%-34s %12s %10s %10s\n",
					clients, setup, slots, "series", "per second", "vs true", "vs bwrap")
				kind := "single-use"
				if setup.reuse > 1 {
					kind = "reused"
				}
				for _, r := range []struct {
					name string
					v    float64
				}{{"fork+exec+wait /bin/true", bare}, {"bwrap --unshare-all /bin/true", bw}, {"Execute shell true (" + kind + ")", ef}} {
					fmt.Printf("%-34s %12.1f %10s %10s\n", r.name, r.v, ratio(r.v, bare), ratio(r.v, bw))
				}
				b.ReportMetric(ef, "executions/s")
				b.ReportMetric(ef/bare, "vs-true")
				if bw > 0 {
					b.ReportMetric(ef/bw, "vs-bwrap")
				}
			}
		})
	}
}
