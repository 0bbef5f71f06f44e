//go:build linux

package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

// TestSessionExecCPUTimeIsTheExecs: an exec's CPU-time limit and its
// reported CPU time count its own processes, not the sandbox's others. A
// daemon left spinning by one exec made every later exec of the sandbox
// end CPU_TIME, a sleep included, with the daemon's CPU time as its own
// (red-team pass). The exec that waits here until the daemon has used
// three times its CPU-time limit must complete and report less than it;
// an exec that spins, itself or in a child, is still stopped at its limit.
func TestSessionExecCPUTimeIsTheExecs(t *testing.T) {
	si := startSessionInstance(t, "sess-cpu", 1)
	id := si.create(t, "alice", &execfarmv1.CreateSandboxRequest{Runtime: sandboxv1.Runtime_RUNTIME_SHELL})
	si.mustExec(t, "alice", id, `(while :; do :; done) >/dev/null 2>&1 </dev/null & echo $! > /tmp/spin.pid`)
	// The waiting exec's own CPU (a shell, a sleep forked twice a second)
	// is tens of ms on the host and ten times that in the cgroup v2 VM:
	// its limit scales (testbin.TimeScale), and the daemon's CPU it waits
	// for is three times the limit, so that counting the daemon's time
	// would stop it.
	limit := testbin.Scaled(200 * time.Millisecond).Milliseconds()
	// Fields 14 and 15 of /proc/PID/stat: utime and stime, in ticks of
	// 10 ms; the comm field, "(sh)", has no space.
	waitForSpinner := fmt.Sprintf(`read -r p < /tmp/spin.pid
while :; do
	read -r l < /proc/$p/stat; set -- $l
	[ $((${14} + ${15})) -ge %d ] && break
	sleep 0.5
done
echo waited`, 3*limit/10)
	r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: waitForSpinner, CpuTimeMs: &limit})
	u := r.result.GetOutcome().GetUsage()
	if err != nil || r.result.GetState() != stateCompleted || r.stdout != "waited\n" {
		t.Fatalf("exec beside a spinning daemon, cpu_time_ms %d: %v, stdout %q, %v; want COMPLETED", limit, r.result, r.stdout, err)
	}
	if used := u.GetCpuUserUs() + u.GetCpuSystemUs(); used >= limit*1000 {
		t.Fatalf("exec beside a spinning daemon reports %d µs of CPU; want its own, below %d ms", used, limit)
	}

	for _, code := range []string{
		`while :; do :; done`,
		`(while :; do :; done) & wait`, // a child's CPU time is the exec's
	} {
		limit := int64(200)
		r, err := si.execRequest(t, "alice", &execfarmv1.ExecRequest{SandboxId: id, Code: code, CpuTimeMs: &limit})
		o := r.result.GetOutcome()
		if err != nil || r.result.GetState() != stateFailed || o.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_CPU_TIME {
			t.Fatalf("spinning exec %q, cpu_time_ms 200: %v, %v; want FAILED CPU_TIME", code, r.result, err)
		}
		if used := o.GetUsage().GetCpuUserUs() + o.GetUsage().GetCpuSystemUs(); used < limit*1000 {
			t.Errorf("spinning exec %q stopped at %d µs of CPU, below its limit of %d ms", code, used, limit)
		}
	}
}
