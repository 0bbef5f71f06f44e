package execution

import (
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// watch polls the sandbox while the run lasts. With limitMs > 0 it stops
// the run with reason CPU_TIME once the sandbox's cgroup has used limitMs
// of CPU (user+system, every process of the sandbox together, unlike a
// per-process RLIMIT_CPU) since base; with sample it records the pids
// count for the peak of a reused sandbox (cgroup.Manager.ResetPeaks). It
// returns the function that ends the watch and waits for it to end.
func (r *run) watch(sb Sandbox, base cgroup.Usage, limitMs int64, sample bool) func() {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(limits.CPUTimeCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.ctx.Done():
				return
			case <-t.C:
			}
			if sample {
				sb.Sample()
			}
			if limitMs <= 0 {
				continue
			}
			u, err := sb.Usage()
			if err != nil {
				continue
			}
			used := u.CPUUserMicros + u.CPUSystemMicros - base.CPUUserMicros - base.CPUSystemMicros
			if used >= limitMs*1000 {
				r.stop(registry.ReasonCPUTime)
				return
			}
		}
	}()
	return func() { close(done); <-ended }
}
