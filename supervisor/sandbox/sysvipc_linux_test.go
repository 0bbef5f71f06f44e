package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
)

// ipcProbe prints the System V IPC limits the sandbox's programs see and
// tries a shared memory segment one page over /dev/shm's 4 MiB.
const ipcProbe = `cd /proc/sys/kernel && for f in shmmax shmall shmmni msgmni msgmnb msgmax sem; do echo "$f $(cat $f)"; done
ipcmk -M 4198400 >/dev/null 2>&1 && echo "segment over shmmax: ACCEPTED" || echo "segment over shmmax: refused"`

// ipcWant is what ipcProbe prints in a sandbox whose /dev/shm is 4 MiB.
const ipcWant = `shmmax 4194304
shmall 1024
shmmni 512
msgmni 4
msgmnb 4096
msgmax 4096
sem 32	1024	32	128
segment over shmmax: refused
`

// TestSysVIPCBounded: the System V IPC of a sandbox, single-use or
// session, is bounded in its IPC namespace before its first program
// runs: shared memory to its /dev/shm's size (a 4 MiB + 4 KiB segment
// is refused), message queues and semaphores to the fixed bounds; the
// start times the step as its "ipc" phase. Without the bounds the
// programs see the kernel's defaults (shmmax 2^64 - 2^24 - 1 and so on).
func TestSysVIPCBounded(t *testing.T) {
	cfg := requireSandbox(t)
	for _, session := range []bool{false, true} {
		t.Run(fmt.Sprintf("session=%v", session), func(t *testing.T) {
			spec := Spec{Limits: cgroup.Limits{MemoryMaxBytes: 256 << 20, PidsMax: 64}, ShmBytes: 4 << 20, Session: session}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sb, err := Start(ctx, cfg, spec)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer func() {
				if err := sb.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}()
			var names []string
			for _, p := range sb.StartPhases() {
				names = append(names, p.Name)
				if p.Name == "ipc" {
					t.Logf("ipc phase: %v", p.Duration)
				}
			}
			if !slices.Contains(names, "ipc") {
				t.Errorf("start phases %q have no ipc", names)
			}
			var out string
			if session {
				out = run(t, sb, ipcProbe).stdout
			} else {
				var b bytes.Buffer
				if _, err := sb.Run(ctx, shell(ipcProbe), func(ev *workerv1.RunEvent) { b.Write(ev.GetStdout()) }); err != nil {
					t.Fatalf("run: %v", err)
				}
				out = b.String()
			}
			if out != ipcWant {
				t.Errorf("in the sandbox:\n%s\nwant:\n%s", out, ipcWant)
			}
		})
	}
}
