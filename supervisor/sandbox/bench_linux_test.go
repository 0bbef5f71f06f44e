package sandbox

import (
	"context"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
)

var benchLimits = cgroup.Limits{MemoryMaxBytes: 256 << 20, PidsMax: 64}

func ignore(*workerv1.RunEvent) {}

// BenchmarkExec measures what an exec's own cgroup costs: an exec of
// /bin/true, and the kill of an exec that runs sleep, with the exec in a
// cgroup of its own (what Exec does) and, as the baseline, in the payload
// cgroup with the other execs (no way to kill a daemon that left the
// process group). Run it alone: go test -run '^$' -bench Exec
// ./supervisor/sandbox/.
func BenchmarkExec(b *testing.B) {
	cfg := requireSandbox(b)
	sb, err := Start(context.Background(), cfg, Spec{Limits: benchLimits, Session: true})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for _, mode := range []struct {
		name      string
		inPayload bool
	}{{"own-cgroup", false}, {"payload", true}} {
		b.Run("true/"+mode.name, func(b *testing.B) {
			for b.Loop() {
				e, err := sb.Exec(context.Background(), ExecRequest{Run: &workerv1.RunRequest{Argv: []string{"/bin/true"}, Dir: "/"}, inPayload: mode.inPayload})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Wait(ignore); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("kill/"+mode.name, func(b *testing.B) {
			for b.Loop() {
				e, err := sb.Exec(context.Background(), ExecRequest{Run: &workerv1.RunRequest{Argv: []string{"/bin/sleep", "1000"}, Dir: "/"}, inPayload: mode.inPayload})
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Kill(); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Wait(ignore); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
