package deploy

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"google.golang.org/grpc"
	"sigs.k8s.io/yaml"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// prometheusOwn are the series Prometheus writes itself for every
// target; an alert may name them although no supervisor exports them.
var prometheusOwn = map[string]bool{"up": true}

// exported returns the metric families a supervisor exports, with every
// kind of event recorded once so that each labelled family has a series
// (as a running supervisor's would), and the names a query may use:
// the families' names, and _bucket, _sum and _count of histograms.
func exported(t *testing.T) ([]*dto.MetricFamily, map[string]bool) {
	t.Helper()
	m := metrics.New()
	if err := m.RegisterLoad(func() metrics.Load {
		return metrics.Load{Running: 1, Queued: 2, PoolSize: 2, PoolReady: 1, Sessions: 1, MaxConcurrent: 4, QueueSize: 1000,
			UIDRanges: 14, UIDRangesInUse: 3, Ready: true, Version: "test",
			Proxy: []metrics.ProxyCount{{Target: "kubernetes", Kind: "list", Outcome: "allowed", N: 1}}}
	}); err != nil {
		t.Fatal(err)
	}
	defer m.RegisterCertificate(func() (time.Time, bool) { return time.Now().Add(90 * 24 * time.Hour), true })()
	m.ExecutionFinished("goja", "completed", "exited", time.Millisecond, time.Millisecond)
	m.SandboxStarted(metrics.PathOnDemand, time.Millisecond, []sandbox.Phase{{Name: "fork", Duration: time.Millisecond}}, nil)
	m.SandboxStarted(metrics.PathWarmPool, 0, nil, &sandbox.CgroupError{Op: sandbox.CgroupCreate, Err: errors.New("no")})
	m.SandboxClosed(errors.New("no"))
	m.QueueRejected(metrics.RejectQueueFull)
	m.SessionCreated(nil)
	m.SessionEnded("deleted")
	g := grpc.NewServer(m.ServerOptions()...)
	sandboxv1.RegisterSandboxServiceServer(g, sandboxv1.UnimplementedSandboxServiceServer{})
	execfarmv1.RegisterSessionServiceServer(g, execfarmv1.UnimplementedSessionServiceServer{})
	m.InitializeGRPC(g)
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY {
			for _, s := range []string{"_sum", "_count", "_bucket"} {
				names[mf.GetName()+s] = true
			}
		}
	}
	return mfs, names
}

// selectors returns the metric names an expression selects.
func selectors(t *testing.T, p parser.Parser, expr string) []string {
	t.Helper()
	e, err := p.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				t.Errorf("%q selects no metric by name", expr)
			}
			out = append(out, name)
		}
		return nil
	})
	return out
}

// TestMonitoring loads the PrometheusRule's groups with Prometheus' own
// rule parser (rulefmt: YAML, PromQL, templates) and the dashboard's
// queries with its PromQL parser, and checks that every metric they name
// is one the supervisor exports; that the alerts the operators need are
// there; and that promlint finds no problem in the exported metrics.
func TestMonitoring(t *testing.T) {
	r, err := Build("monitoring")
	if err != nil {
		t.Fatal(err)
	}
	mfs, names := exported(t)
	p := parser.NewParser(parser.Options{})
	named := map[string]bool{}
	check := func(where, expr string) {
		for _, n := range selectors(t, p, expr) {
			named[n] = true
			if !names[n] && !prometheusOwn[n] {
				t.Errorf("%s names %s, which the supervisor does not export", where, n)
			}
		}
	}

	rules := r.Find("PrometheusRule", "execfarm")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules", len(rules))
	}
	spec, err := yaml.Marshal(rules[0]["spec"])
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		t.Fatalf("rulefmt: %v", errs)
	}
	var alerts []string
	for _, g := range groups.Groups {
		for _, rule := range g.Rules {
			alerts = append(alerts, rule.Alert)
			check("alert "+rule.Alert, rule.Expr)
			if rule.Labels["severity"] == "" || rule.Annotations["summary"] == "" {
				t.Errorf("alert %s lacks a severity or a summary", rule.Alert)
			}
		}
	}
	for _, want := range []string{"ExecfarmSandboxStartErrors", "ExecfarmQueueNearlyFull", "ExecfarmExecutionsFailingInternal",
		"ExecfarmCertificateExpiresSoon", "ExecfarmNotReady"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}

	cms := r.Find("ConfigMap", "execfarm-dashboard")
	if len(cms) != 1 {
		t.Fatalf("%d dashboard ConfigMaps", len(cms))
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	data := cms[0]["data"].(map[string]any)["execfarm-dashboard.json"].(string)
	if err := json.Unmarshal([]byte(data), &dash); err != nil {
		t.Fatal(err)
	}
	// Grafana's variables, as Grafana substitutes them before querying.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$pod", ".*")
	for _, panel := range dash.Panels {
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, tg := range panel.Targets {
			check("panel "+panel.Title, vars.Replace(tg.Expr))
		}
	}
	// What the dashboard covers: throughput, latency by path, queue,
	// pool, start-up phases, errors.
	for _, n := range []string{"execfarm_executions_total", "execfarm_sandbox_start_seconds_bucket", "execfarm_executions_queued",
		"execfarm_queue_capacity", "execfarm_warm_pool_sandboxes", "execfarm_sandbox_start_phase_seconds_bucket",
		"execfarm_cgroup_errors_total", "execfarm_sandbox_teardown_errors_total", "execfarm_queue_rejections_total"} {
		if !named[n] {
			t.Errorf("nothing shows %s", n)
		}
	}

	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("promlint: %s: %s", pr.Metric, pr.Text)
	}
}
