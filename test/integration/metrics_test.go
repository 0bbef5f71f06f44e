//go:build linux

package integration

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/metrics"
)

// TestMetricsCountWhatHappened: a supervisor with metrics and a warm pool
// of one runs a shell execution, a goja one that exits 3, and refuses a
// request without code; the metrics say exactly that, by runtime, state,
// reason and gRPC status code, and count the warm pool's start-ups.
func TestMetricsCountWhatHappened(t *testing.T) {
	requireSandbox(t)
	m := metrics.New()
	in := startPoolInstance(t, "metrics", 1, func(cfg *supervisor.Config) { cfg.Metrics = m })
	// The pool's first start-up has ended (and been counted) once it has
	// a ready sandbox.
	waitPoolReady(t, in, 1)
	if resp := execute(t, in.client, shellReq("echo hi", 0)); !resp.GetSuccess() {
		t.Fatalf("shell: %s", describe(resp))
	}
	if resp := execute(t, in.client, gojaReq("process.exit(3)", 0)); resp.GetSuccess() {
		t.Fatalf("goja exit 3 succeeded: %s", describe(resp))
	}
	_, err := in.client.Execute(callCtx(t), shellReq("", 0))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Execute without code: %v, want InvalidArgument", err)
	}

	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, x := range mf.GetMetric() {
				have := map[string]string{}
				for _, l := range x.GetLabel() {
					have[l.GetName()] = l.GetValue()
				}
				for k, v := range labels {
					if have[k] != v {
						continue next
					}
				}
				return metricValue(x)
			}
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"execfarm_executions_total", map[string]string{"runtime": "shell", "state": "completed", "reason": "exited"}, 1},
		{"execfarm_executions_total", map[string]string{"runtime": "goja", "state": "failed", "reason": "exited"}, 1},
		{"execfarm_execution_run_seconds", map[string]string{"runtime": "shell"}, 1},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "Execute", "grpc_code": "OK"}, 2},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "Execute", "grpc_code": "InvalidArgument"}, 1},
		{"grpc_server_handled_total", map[string]string{"grpc_method": "CancelExecution", "grpc_code": "OK"}, 0},
		{"execfarm_warm_pool_size", nil, 1},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The pool's first start-up is counted, and none failed.
	if got := value("execfarm_sandbox_starts_total", map[string]string{"path": "warm_pool", "outcome": "ok"}); got < 1 {
		t.Errorf("warm-pool start-ups counted: %v, want at least 1", got)
	}
	for _, path := range []string{"warm_pool", "on_demand"} {
		if got := value("execfarm_sandbox_starts_total", map[string]string{"path": path, "outcome": "error"}); got != 0 {
			t.Errorf("failed %s start-ups: %v, want 0", path, got)
		}
	}
}

// metricValue is a counter's or gauge's value, or a histogram's count.
func metricValue(x *dto.Metric) float64 {
	switch {
	case x.GetCounter() != nil:
		return x.GetCounter().GetValue()
	case x.GetGauge() != nil:
		return x.GetGauge().GetValue()
	case x.GetHistogram() != nil:
		return float64(x.GetHistogram().GetSampleCount())
	}
	return 0
}
