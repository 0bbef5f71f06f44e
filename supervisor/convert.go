package supervisor

import (
	"bytes"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/testresult"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// The registry numbers states and reasons as the wire does; these
// conversions are the one place that relies on it.

func stateToProto(s registry.State) sandboxv1.ExecutionState {
	return sandboxv1.ExecutionState(s)
}

func stateFromProto(s sandboxv1.ExecutionState) (registry.State, bool) {
	rs := registry.State(s)
	return rs, rs >= registry.StatePending && rs <= registry.StateTimeout
}

func reasonToProto(r registry.Reason) sandboxv1.TerminationReason {
	return sandboxv1.TerminationReason(r)
}

func runtimeToProto(name string) sandboxv1.Runtime {
	switch name {
	case program.Goja:
		return sandboxv1.Runtime_RUNTIME_GOJA
	case program.Node:
		return sandboxv1.Runtime_RUNTIME_NODE
	case program.Shell:
		return sandboxv1.Runtime_RUNTIME_SHELL
	case program.Python:
		return sandboxv1.Runtime_RUNTIME_PYTHON
	}
	return sandboxv1.Runtime_RUNTIME_UNSPECIFIED
}

func outcomeToProto(id string, r registry.Result) *sandboxv1.ExecutionOutcome {
	o := &sandboxv1.ExecutionOutcome{
		ExecutionId:       id,
		TerminationReason: reasonToProto(r.Reason),
		ExitCode:          int32(r.ExitCode),
		Signal:            int32(r.Signal),
		Usage: &sandboxv1.ResourceUsage{
			CpuUserUs: r.Usage.CPUUserMicros, CpuSystemUs: r.Usage.CPUSystemMicros,
			WallMs: r.Usage.WallMs, PeakMemoryBytes: r.Usage.PeakMemoryBytes,
			PeakMemorySource: r.Usage.PeakMemorySource, PidsPeak: r.Usage.PidsPeak,
			OomKills: r.Usage.OOMKills,
		},
		StdoutTruncated: r.StdoutTruncated,
		StderrTruncated: r.StderrTruncated,
		QueueWaitMs:     r.QueueWaitMs,
		SandboxId:       r.SandboxID,
		StdoutBytes:     r.StdoutBytes,
		StderrBytes:     r.StderrBytes,
	}
	if x, ok := r.Extra.(execution.Extra); ok {
		o.EffectiveLimits = x.Limits.ToProto()
		o.Runtime = runtimeToProto(x.Runtime)
		o.Deterministic, o.Seed = x.Deterministic, x.Seed
	}
	return o
}

func resultToProto(id string, r registry.Result) *sandboxv1.ExecuteResult {
	return &sandboxv1.ExecuteResult{
		Cached:          cachedToProto(r),
		Success:         r.Success,
		Error:           errorText(r),
		ExecutionTimeMs: r.Usage.WallMs,
		State:           stateToProto(r.State),
		Outcome:         outcomeToProto(id, r),
	}
}

// errorText is ProDisco's `error`, the same in every reply that carries
// the result: unset on success; the run's error otherwise (the thrown
// error's message for goja and node, the timeout's and the cancel's
// ProDisco texts: execution's errorText), or, for a program that ended
// well but whose output hit its limit, which limit.
func errorText(r registry.Result) *string {
	if r.Success {
		return nil
	}
	if r.State == registry.StateCompleted && (r.StdoutTruncated || r.StderrTruncated) {
		// ProDisco's success is false when a limit was hit (DESIGN.md):
		// say which.
		return ptr("output truncated: a stream exceeded max_output_bytes (head and tail kept; see stdout_truncated, stderr_truncated)")
	}
	msg := r.Error
	if msg == "" && r.Reason != registry.ReasonExited {
		msg = r.Reason.String()
	}
	return &msg
}

// proDiscoView reports whether e's ProDisco fields are filled as
// ProDisco's executor fills them, from its console lines: a goja or node
// execution whose request did not ask for raw output.
func proDiscoView(e *registry.Execution, raw bool) bool {
	rt := e.Meta().Runtime
	return !raw && (rt == program.Goja || rt == program.Node)
}

func infoToProto(in registry.Info, queuePos int) *sandboxv1.ExecutionInfo {
	info := &sandboxv1.ExecutionInfo{
		ExecutionId:       in.ID,
		State:             stateToProto(in.State),
		CodePreview:       in.CodePreview,
		IsCached:          in.IsCached,
		Runtime:           runtimeToProto(in.Runtime),
		TerminationReason: reasonToProto(in.Reason),
		QueuePosition:     int32(queuePos),
		SandboxId:         in.SandboxID,
	}
	// ProDisco's started_at_ms is when the execution was submitted.
	info.StartedAtMs = in.CreatedAt.UnixMilli()
	if !in.FinishedAt.IsZero() {
		f := in.FinishedAt.UnixMilli()
		info.FinishedAtMs = &f
	}
	if in.CachedName != "" {
		info.CachedName = &in.CachedName
	}
	return info
}

// proDiscoHashLen is the length of ProDisco's content_hash: the first 12
// hex digits of the code's SHA-256 (its cache-manager.ts).
const proDiscoHashLen = 12

func cacheEntryToProto(e cache.Entry) *sandboxv1.CacheEntry {
	// content_hash in ProDisco's shape, 12 hex digits; the whole hash in
	// execfarm's content_sha256.
	short := e.ContentHash
	if len(short) > proDiscoHashLen {
		short = short[:proDiscoHashLen]
	}
	return &sandboxv1.CacheEntry{Name: e.Name, Description: e.Description, CreatedAtMs: e.CreatedAt.UnixMilli(), ContentHash: short, ContentSha256: e.ContentHash}
}

// cachedToProto is ProDisco's `cached`: the entry a run created, or nil.
func cachedToProto(r registry.Result) *sandboxv1.CacheEntry {
	if x, ok := r.Extra.(execution.Extra); ok && x.Cached != nil {
		return cacheEntryToProto(*x.Cached)
	}
	return nil
}

// testResponse is ExecuteTest's answer for the test run id that ended
// with res: the per-test results and the summary its program wrote on the
// results channel (Result.Attachment), its output, and whether it
// succeeded: it ended normally and every test that ran passed.
func testResponse(id string, res registry.Result, h heads) *sandboxv1.ExecuteTestResponse {
	summary, results, _ := testresult.Parse(bytes.NewReader(res.Attachment))
	resp := &sandboxv1.ExecuteTestResponse{
		Summary: &sandboxv1.TestSummary{
			Total: int32(summary.Total), Passed: int32(summary.Passed),
			Failed: int32(summary.Failed), Skipped: int32(summary.Skipped),
		},
		Output:             h.out,
		ErrorOutput:        h.errOut,
		ExecutionTimeMs:    res.Usage.WallMs,
		Outcome:            outcomeToProto(id, res),
		OutputPartial:      h.outMore,
		ErrorOutputPartial: h.errMore,
	}
	for _, r := range results {
		tr := &sandboxv1.TestResult{Name: r.Name, Passed: r.Passed, DurationMs: r.DurationMs, Skipped: r.Skipped}
		if r.Error != "" {
			tr.Error = ptr(r.Error)
		}
		resp.Tests = append(resp.Tests, tr)
	}
	// Success: the program ended normally and every test that ran passed.
	resp.Success = res.State == registry.StateCompleted && summary.Complete && summary.OK()
	switch {
	case res.AttachmentDropped:
		resp.Error = ptr("the test results were dropped to keep the supervisor's retention budget")
	case summary.Forged:
		resp.Error = ptr("the test results channel was written by the code under test, not the test harness: the run cannot pass")
	case summary.Error != "":
		resp.Error = ptr(summary.Error)
	case res.State != registry.StateCompleted && res.Reason != registry.ReasonExited:
		resp.Error = errorText(res)
	case !summary.Complete:
		resp.Error = ptr("the test run ended before it reported a summary")
	}
	return resp
}
