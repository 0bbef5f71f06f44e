package load

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/hostscan"
)

const (
	// executions is how many async executions the load test queues.
	executions = 1000
	// outputLines × lineBytes is each execution's stdout: 10 KiB.
	outputLines = 160
	lineBytes   = 64
	// rssCeiling is the most the supervisor process may hold resident.
	rssCeiling = 200 << 20
)

// pad fills each output line to lineBytes: "IIII:LLL:" + pad + "\n".
var pad = strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 2)[:lineBytes-10]

// outputCode is a shell program printing execution i's 10 KiB: every line
// names the execution and the line, so a byte from another execution or a
// lost or repeated line shows.
func outputCode(i int) string {
	return fmt.Sprintf(`n=0; while [ $n -lt %d ]; do printf '%%04d:%%03d:%%s\n' %d $n %s; n=$((n+1)); done`, outputLines, i, pad)
}

func wantOutput(i int) string {
	var b strings.Builder
	for n := range outputLines {
		fmt.Fprintf(&b, "%04d:%03d:%s\n", i, n, pad)
	}
	return b.String()
}

// TestThousandQueuedExecutions queues 1000 async executions, each printing
// a known 10 KiB, on a supervisor with two slots, then reads them all: none
// is lost, every output is byte-exact, and the supervisor's RSS (sampled
// from /proc every 20 ms throughout) stays under 200 MiB.
func TestThousandQueuedExecutions(t *testing.T) {
	requireRoot(t)
	if wantOutput(0) == "" || len(wantOutput(0)) != 10<<10 {
		t.Fatalf("expected output is %d bytes, want 10 KiB", len(wantOutput(0)))
	}
	s := startServer(t, 0, "--max-concurrent", "2", "--queue-size", "2000", "--warm-pool", "2")
	stopRSS := rssSampler(s.proc.Pid(), 20*time.Millisecond)
	idle, _ := rssBytes(s.proc.Pid())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	start := time.Now()
	ids := make([]string, executions)
	for i := range executions {
		req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: outputCode(i)}, Runtime: sandboxv1.Runtime_RUNTIME_SHELL}
		resp, err := s.client.ExecuteAsync(ctx, req)
		if err != nil {
			stopRSS()
			t.Fatalf("ExecuteAsync %d: %v", i, err)
		}
		ids[i] = resp.GetExecutionId()
	}
	queued := time.Since(start)
	afterQueue, _ := rssBytes(s.proc.Pid())

	seen := map[string]bool{}
	var failed []string
	var wall, qwait time.Duration
	for i, id := range ids {
		if seen[id] {
			failed = append(failed, fmt.Sprintf("execution %d: id %s handed out twice", i, id))
		}
		seen[id] = true
		r, err := s.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
		if err != nil {
			stopRSS()
			t.Fatalf("GetExecution(wait) %d %s: %v (after %v)", i, id, err, time.Since(start))
		}
		o := r.GetResult().GetOutcome()
		switch {
		case r.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED:
			failed = append(failed, fmt.Sprintf("execution %d: state %s error %q", i, r.GetState(), r.GetResult().GetError()))
		case r.GetOutput() != wantOutput(i) || r.GetOutputLength() != 10<<10 || o.GetStdoutBytes() != 10<<10:
			failed = append(failed, fmt.Sprintf("execution %d: output of %d bytes (length %d, written %d) differs from the expected 10 KiB",
				i, len(r.GetOutput()), r.GetOutputLength(), o.GetStdoutBytes()))
		}
		wall += time.Duration(o.GetUsage().GetWallMs()) * time.Millisecond
		qwait = max(qwait, time.Duration(o.GetQueueWaitMs())*time.Millisecond)
	}
	total := time.Since(start)
	peak, samples, rerr := stopRSS()
	if len(failed) > 0 {
		t.Errorf("%d of %d executions wrong; first ones:\n%s", len(failed), executions, strings.Join(failed[:min(len(failed), 10)], "\n"))
	}
	if rerr != nil {
		t.Fatalf("sample supervisor RSS: %v", rerr)
	}
	t.Logf("%d executions: queued in %v, all read after %v (%.1f/s); mean program wall %v, longest queue wait %v",
		executions, queued.Round(time.Millisecond), total.Round(time.Millisecond), float64(executions)/total.Seconds(),
		(wall / executions).Round(time.Millisecond), qwait.Round(time.Millisecond))
	t.Logf("supervisor RSS: idle %s, with %d queued %s, peak %s over %d samples (ceiling %s)",
		mib(idle), executions, mib(afterQueue), mib(peak), samples, mib(rssCeiling))
	if peak >= rssCeiling {
		t.Errorf("supervisor RSS peaked at %s, want under %s", mib(peak), mib(rssCeiling))
	}
}

// TestConcurrentClientsNeverShareASandbox runs 64 clients, each doing a
// few executions at once against four slots, and checks that every
// execution names a sandbox and no sandbox served two executions.
func TestConcurrentClientsNeverShareASandbox(t *testing.T) {
	requireRoot(t)
	const clients, each = 64, 4
	s := startServer(t, 1, "--max-concurrent", "4", "--queue-size", "1000", "--warm-pool", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type use struct {
		who     string
		sandbox string
		err     string
	}
	uses := make(chan use, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				who := strconv.Itoa(c) + "/" + strconv.Itoa(k)
				req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "echo " + who}, Runtime: sandboxv1.Runtime_RUNTIME_SHELL}
				resp, err := s.client.Execute(ctx, req)
				switch {
				case err != nil:
					uses <- use{who: who, err: err.Error()}
				case !resp.GetSuccess() || resp.GetOutput() != who+"\n":
					uses <- use{who: who, err: fmt.Sprintf("state %s output %q error %q", resp.GetState(), resp.GetOutput(), resp.GetError())}
				default:
					uses <- use{who: who, sandbox: resp.GetOutcome().GetSandboxId()}
				}
			}
		}()
	}
	wg.Wait()
	close(uses)
	by := map[string]string{}
	n := 0
	for u := range uses {
		n++
		switch prev, dup := by[u.sandbox]; {
		case u.err != "":
			t.Errorf("execution %s: %s", u.who, u.err)
		case u.sandbox == "":
			t.Errorf("execution %s: no sandbox id", u.who)
		case dup:
			t.Errorf("sandbox %s served both %s and %s", u.sandbox, prev, u.who)
		default:
			by[u.sandbox] = u.who
		}
	}
	if n != clients*each || len(by) != clients*each {
		t.Fatalf("%d results, %d distinct sandboxes; want %d of each", n, len(by), clients*each)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// TestSupervisorDeathKillsEverySandbox kills execfarm serve with SIGKILL
// (no shutdown code runs) while an execution runs and warm sandboxes
// wait, and checks that nothing of theirs survives: the fork server dies
// with the supervisor (its Pdeathsig), every worker with the fork server
// (theirs), and each worker's pid namespace with it.
func TestSupervisorDeathKillsEverySandbox(t *testing.T) {
	requireRoot(t)
	const slot = 2
	s := startServer(t, slot, "--max-concurrent", "2", "--warm-pool", "2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := s.client.ExecuteStream(ctx, &sandboxv1.ExecuteRequest{
		Source:  &sandboxv1.ExecuteRequest_Code{Code: "echo started; exec sleep 1000"},
		Runtime: sandboxv1.Runtime_RUNTIME_SHELL,
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunk, err := stream.Recv(); err != nil || !strings.Contains(chunk.GetOutput(), "started") {
		t.Fatalf("first chunk %v, %v; want the program's output", chunk, err)
	}
	lo := uidBase + uint32(slot*serverSlots*rangeSize)
	hi := lo + serverSlots*rangeSize
	if procs := hostscan.InUIDWindow(lo, hi); len(procs) == 0 {
		t.Fatal("no sandbox process found while an execution runs: the window is wrong")
	}
	var forkServers []int
	for _, p := range hostscan.WithMarker(forkserver.Arg) {
		if p.PPID == s.proc.Pid() {
			forkServers = append(forkServers, p.PID)
		}
	}
	if len(forkServers) != 1 {
		t.Fatalf("fork servers of execfarm serve (pid %d): %v, want one", s.proc.Pid(), forkServers)
	}
	if err := s.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	// The kernel delivers the Pdeathsigs and init reaps the orphans on
	// its own time: wait for that, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := hostscan.InUIDWindow(lo, hi)
		if _, err := os.Stat("/proc/" + strconv.Itoa(forkServers[0])); err == nil {
			left = append(left, hostscan.Proc{PID: forkServers[0], Cmdline: "the fork server"})
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after SIGKILL of execfarm serve, still running:\n%v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
