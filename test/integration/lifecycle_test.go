//go:build linux

package integration

import (
	"github.com/execfarm/execfarm/test/hostscan"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

const (
	stateCompleted = sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED
	stateFailed    = sandboxv1.ExecutionState_EXECUTION_STATE_FAILED
	stateCancelled = sandboxv1.ExecutionState_EXECUTION_STATE_CANCELLED
	stateTimeout   = sandboxv1.ExecutionState_EXECUTION_STATE_TIMEOUT
	stateRunning   = sandboxv1.ExecutionState_EXECUTION_STATE_RUNNING
)

// sleepMarker is a sleep argument unique to this test process, so that a
// scan of the host's command lines finds only this run's programs.
var sleepMarker = fmt.Sprintf("1000.%d", os.Getpid())

func TestSpinningGojaTimesOutWhileOthersRun(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	start := time.Now()
	// The timeout counts the sandbox's start-up, which takes most of a
	// second in the cgroup v2 VM: scaled, so that the program runs.
	timeout := testbin.Scaled(time.Second)
	stream, err := in.client.ExecuteStream(ctx, gojaReq(`console.log("spinning"); while (true) {}`, timeout.Milliseconds()))
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetOutput() != "spinning\n" {
		t.Fatalf("first chunk %v, %v; want the output \"spinning\\n\"", first, err)
	}
	// The program runs from here on: how long it takes to end is
	// measured from its first output, not from the request, whose
	// sandbox start-up is another test's business.
	running := time.Now()

	// The result is awaited beside the other client's executions, so
	// that when it came is measured alone.
	type outcome struct {
		result *sandboxv1.ExecuteResult
		err    error
		at     time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		for {
			ch, err := stream.Recv()
			if err != nil || ch.GetResult() != nil {
				done <- outcome{ch.GetResult(), err, time.Now()}
				return
			}
		}
	}()

	// The spinning program holds a slot and a core; a second client's
	// executions must keep completing meanwhile.
	other := in.dial(t)
	const workers, each = 2, 4
	var mu sync.Mutex
	var firstDone, lastDone time.Time
	var errs []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				want := fmt.Sprintf("%d-%d", w, i)
				resp, err := other.Execute(ctx, gojaReq(fmt.Sprintf("console.log(%q)", want), 0))
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case !resp.GetSuccess() || resp.GetOutput() != want+"\n":
					errs = append(errs, describe(resp))
				}
				if firstDone.IsZero() {
					firstDone = time.Now()
				}
				lastDone = time.Now()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	o := <-done
	if o.err != nil {
		t.Fatalf("stream ended without a result: %v", o.err)
	}
	result, ended := o.result, o.at
	if len(errs) > 0 {
		t.Fatalf("concurrent executions failed: %v", errs)
	}
	if result.GetState() != stateTimeout || result.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT {
		t.Fatalf("spinning program ended %s (%s); want TIMEOUT", result.GetState(), result.GetOutcome().GetTerminationReason())
	}
	if took := ended.Sub(running); took > 2*timeout {
		t.Fatalf("spinning program with a %v timeout ended after %v; want within %v", timeout, took, 2*timeout)
	}
	// Not starved: the other client's first execution completed while
	// the spinning one ran (all of them may take longer than its second).
	if !firstDone.Before(ended) {
		t.Fatalf("the first concurrent execution completed at %v, after the spinning one ended at %v", firstDone.Sub(start), ended.Sub(start))
	}
	t.Logf("%d concurrent executions done %v to %v after start; spinning one ended after %v", workers*each, firstDone.Sub(start), lastDone.Sub(start), ended.Sub(start))
}

func TestTimeoutKillsTheProcessTree(t *testing.T) {
	in := requireSandbox(t)
	start := time.Now()
	// The timeout counts the sandbox's start-up: in the environment's
	// time, so that the tree exists before it fires (the VM takes seconds
	// to start a sandbox).
	timeout := testbin.Scaled(time.Second)
	resp := execute(t, in.client, shellReq(fmt.Sprintf("sleep %s & sleep %s; wait", sleepMarker, sleepMarker), timeout.Milliseconds()))
	took := time.Since(start)
	if resp.GetState() != stateTimeout || resp.GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT {
		t.Fatalf("want TIMEOUT; got %s", describe(resp))
	}
	if resp.GetOutcome().GetSandboxId() == "" {
		t.Fatalf("the timeout fired before the program had a sandbox: %s", describe(resp))
	}
	if took > testbin.Scaled(3*time.Second) {
		t.Fatalf("%v timeout took %v; want within %v", timeout, took, testbin.Scaled(3*time.Second))
	}
	if ps := hostscan.WithMarker("sleep " + sleepMarker); len(ps) > 0 {
		t.Fatalf("processes left after the timeout: %v", ps)
	}
	// The rest of the teardown may follow the result.
	settled(t, in)
	if cg := sandboxCgroups(resp.GetOutcome().GetSandboxId()); len(cg) > 0 {
		t.Fatalf("sandbox cgroups left after the timeout: %v", cg)
	}
	if l := leftovers(in); len(l) > 0 {
		t.Fatalf("sandbox leftovers after the timeout:\n%s", strings.Join(l, "\n"))
	}
}

func TestMemoryLimitEndsInOOMKill(t *testing.T) {
	in := requireSandbox(t)
	tests := []struct {
		name string
		req  *sandboxv1.ExecuteRequest
	}{
		{"python 256 MiB", pythonReq(`b = b"x" * (256 << 20); print(len(b))`, 0)},
		{"goja growing arrays", gojaReq(`const a = []; for (;;) a.push(new Array(1e6).fill(1))`, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.GetRuntime() == sandboxv1.Runtime_RUNTIME_PYTHON {
				requirePython(t)
			}
			tt.req.Limits = &sandboxv1.ResourceLimits{MaxMemoryBytes: 64 << 20, TimeoutMs: 30_000 * testbin.TimeScale()}
			resp := execute(t, in.client, tt.req)
			o := resp.GetOutcome()
			if resp.GetState() != stateFailed || o.GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_MEMORY || resp.GetSuccess() {
				t.Fatalf("want FAILED with reason MEMORY; got %s", describe(resp))
			}
			if o.GetUsage().GetOomKills() == 0 {
				t.Fatalf("reason MEMORY without an OOM kill counted: %v", o.GetUsage())
			}
			after := execute(t, in.client, shellReq("echo alive", 0))
			if !after.GetSuccess() || after.GetOutput() != "alive\n" {
				t.Fatalf("execution after the OOM kill: %s", describe(after))
			}
		})
	}
}

func TestCancelRunningAsyncExecution(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	marker := sleepMarker + "1"
	async, err := in.client.ExecuteAsync(ctx, shellReq(fmt.Sprintf("sleep %s & echo ready; wait", marker), 0))
	if err != nil {
		t.Fatalf("ExecuteAsync: %v", err)
	}
	id := async.GetExecutionId()
	if r := waitOutput(ctx, t, in.client, id, "ready"); r.GetResult() != nil {
		t.Fatalf("execution ended before it was cancelled: %v", r)
	}
	if ps := hostscan.WithMarker("sleep " + marker); len(ps) == 0 {
		t.Fatalf("the program's sleep is not running on the host; the test cannot tell whether cancel kills it")
	}
	resp, err := in.client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id})
	if err != nil {
		t.Fatalf("CancelExecution: %v", err)
	}
	if !resp.GetSuccess() || resp.GetState() != stateCancelled {
		t.Fatalf("CancelExecution = %v; want success and CANCELLED", resp)
	}
	if ps := hostscan.WithMarker("sleep " + marker); len(ps) > 0 {
		t.Fatalf("processes left after CancelExecution returned: %v", ps)
	}
	// The rest of the teardown may follow the result.
	settled(t, in)
	if l := leftovers(in); len(l) > 0 {
		t.Fatalf("sandbox leftovers after CancelExecution returned:\n%s", strings.Join(l, "\n"))
	}
	got, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	if err != nil || got.GetState() != stateCancelled || got.GetOutput() != "ready\n" ||
		got.GetResult().GetOutcome().GetTerminationReason() != sandboxv1.TerminationReason_TERMINATION_REASON_CANCELLED {
		t.Fatalf("GetExecution after cancel = %v, %v; want CANCELLED, reason CANCELLED, output kept", got, err)
	}
}

func TestClosingTheStreamCancels(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	marker := sleepMarker + "2"
	sctx, closeStream := context.WithCancel(ctx)
	stream, err := in.client.ExecuteStream(sctx, shellReq(fmt.Sprintf("echo ready; sleep %s", marker), 0))
	if err != nil {
		closeStream()
		t.Fatalf("ExecuteStream: %v", err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetOutput() != "ready\n" || first.GetExecutionId() == "" {
		closeStream()
		t.Fatalf("first chunk %v, %v; want \"ready\\n\" with an execution id", first, err)
	}
	closeStream()
	resp, err := in.client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: first.GetExecutionId(), Wait: true})
	if err != nil {
		t.Fatalf("GetExecution(wait): %v", err)
	}
	if resp.GetState() != stateCancelled {
		t.Fatalf("after the client closed the stream the execution is %s; want CANCELLED", resp.GetState())
	}
	if ps := hostscan.WithMarker("sleep " + marker); len(ps) > 0 {
		t.Fatalf("processes left after the stream was closed: %v", ps)
	}
}

func TestStreamDeliversOutputWhileRunning(t *testing.T) {
	in := requireSandbox(t)
	ctx := callCtx(t)
	start := time.Now()
	stream, err := in.client.ExecuteStream(ctx, shellReq("for i in 1 2 3 4 5; do echo $i; sleep 0.2; done", 0))
	if err != nil {
		t.Fatalf("ExecuteStream: %v", err)
	}
	type arrival struct {
		chunk *sandboxv1.ExecuteChunk
		at    time.Duration
	}
	var chunks []arrival
	for {
		ch, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		chunks = append(chunks, arrival{ch, time.Since(start)})
	}
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	last := chunks[len(chunks)-1].chunk
	if last.GetResult() == nil || !last.GetResult().GetSuccess() || last.GetResult().GetState() != stateCompleted {
		t.Fatalf("last chunk %v; want a successful result", last)
	}
	var out strings.Builder
	var outs []arrival
	for _, a := range chunks[:len(chunks)-1] {
		if a.chunk.GetResult() != nil {
			t.Fatalf("a result before the last chunk: %v", a.chunk)
		}
		if a.chunk.GetExecutionId() != last.GetExecutionId() {
			t.Fatalf("chunk of execution %s in the stream of %s", a.chunk.GetExecutionId(), last.GetExecutionId())
		}
		out.WriteString(a.chunk.GetOutput())
		outs = append(outs, a)
	}
	if out.String() != "1\n2\n3\n4\n5\n" {
		t.Fatalf("streamed output %q", out.String())
	}
	if len(outs) < 3 {
		t.Fatalf("%d output chunks for 5 lines 200 ms apart; want them delivered as written", len(outs))
	}
	spread := outs[len(outs)-1].chunk.GetTimestampMs() - outs[0].chunk.GetTimestampMs()
	if spread < 500 {
		t.Fatalf("output chunk timestamps spread over %d ms; want most of the program's second", spread)
	}
	ended := chunks[len(chunks)-1].at
	if early := ended - outs[0].at; early < 500*time.Millisecond {
		t.Fatalf("first output arrived %v before the result; want it as it is written (~0.8 s before)", early)
	}
}
