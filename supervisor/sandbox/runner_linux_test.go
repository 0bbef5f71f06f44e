package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// TestWorkerRunsOnOneP checks that the worker starts with GOMAXPROCS=1
// (workerGOMAXPROCS): a second P costs every sandbox start threads, page faults
// and CPU for work one P does.
func TestWorkerRunsOnOneP(t *testing.T) {
	sb := startSession(t)
	pid := sb.runner.proc.Pid
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if string(kv) == workerGOMAXPROCS {
			return
		}
		if name, _, ok := bytes.Cut(kv, []byte("=")); ok {
			names = append(names, string(name))
		}
	}
	t.Errorf("worker environment (%v) lacks %s", names, workerGOMAXPROCS)
}
