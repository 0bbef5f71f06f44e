package metrics

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestExecutionsAndStartsAreCounted(t *testing.T) {
	m := New()
	m.ExecutionFinished("shell", "completed", "exited", 20*time.Millisecond, 300*time.Millisecond)
	m.ExecutionFinished("shell", "completed", "exited", 0, 100*time.Millisecond)
	m.ExecutionFinished("", "cancelled", "cancelled", time.Second, 0) // never ran
	m.SandboxStarted(PathWarmPool, 15*time.Millisecond, nil, nil)
	m.SandboxStarted(PathOnDemand, 0, nil, errors.New("no"))

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"shell", "completed", "exited"}, 2},
		{[]string{"unspecified", "cancelled", "cancelled"}, 1},
		{[]string{"goja", "completed", "exited"}, 0},
	} {
		if got := testutil.ToFloat64(m.executions.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("executions_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.queueWait); n != 1 {
		t.Errorf("queue wait: %d series, want 1", n)
	}
	// The cancelled one never ran: two observations of run time, not three.
	if got := histogramCount(t, m, "execfarm_execution_run_seconds"); got != 2 {
		t.Errorf("run_seconds count = %d, want 2", got)
	}
	if got := testutil.ToFloat64(m.starts.WithLabelValues(PathWarmPool, "ok")); got != 1 {
		t.Errorf("starts{warm_pool,ok} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.starts.WithLabelValues(PathOnDemand, "error")); got != 1 {
		t.Errorf("starts{on_demand,error} = %v, want 1", got)
	}
	if got := histogramCount(t, m, "execfarm_sandbox_start_seconds"); got != 1 {
		t.Errorf("start_seconds count = %d, want 1 (failed starts have no duration)", got)
	}
}

func histogramCount(t *testing.T, m *Metrics, name string) uint64 {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, x := range mf.GetMetric() {
				n += x.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

func TestLoadIsReadAtScrape(t *testing.T) {
	m := New()
	calls := 0
	err := m.RegisterLoad(func() Load {
		calls++
		return Load{Running: 2, Queued: 7, PoolSize: 4, PoolReady: 1, PoolStarting: 2, PoolInUse: 1,
			Proxy: []ProxyCount{{Target: "kubernetes", Kind: "list", Outcome: "allowed", N: 5}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP execfarm_executions_queued Executions waiting for a slot now.
# TYPE execfarm_executions_queued gauge
execfarm_executions_queued 7
# HELP execfarm_executions_running Executions running in a sandbox now.
# TYPE execfarm_executions_running gauge
execfarm_executions_running 2
# HELP execfarm_warm_pool_sandboxes Warm-pool sandboxes now, by state (ready, starting, in_use).
# TYPE execfarm_warm_pool_sandboxes gauge
execfarm_warm_pool_sandboxes{state="in_use"} 1
execfarm_warm_pool_sandboxes{state="ready"} 1
execfarm_warm_pool_sandboxes{state="starting"} 2
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"execfarm_executions_queued", "execfarm_executions_running", "execfarm_warm_pool_sandboxes"); err != nil {
		t.Error(err)
	}
	if calls != 1 {
		t.Errorf("load read %d times for one scrape, want 1", calls)
	}
	if err := m.RegisterLoad(func() Load { return Load{} }); err == nil {
		t.Error("a second RegisterLoad succeeded; want an error")
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.ExecutionFinished("goja", "completed", "exited", 0, 0)
	m.SandboxStarted(PathOnDemand, time.Millisecond, nil, nil)
	m.InitializeGRPC(nil)
	if o := m.ServerOptions(); o != nil {
		t.Errorf("ServerOptions of nil Metrics = %v, want none", o)
	}
	if err := m.RegisterLoad(func() Load { return Load{} }); err != nil {
		t.Errorf("RegisterLoad on nil Metrics: %v", err)
	}
}

// TestServeOnlyMetrics: GET /metrics answers in the text format; other
// methods and paths do not; Serve returns nil once its listener closes.
func TestServeOnlyMetrics(t *testing.T) {
	m := New()
	m.ExecutionFinished("python", "timeout", "timeout", 0, time.Second)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- m.Serve(lis) }()
	base := "http://" + lis.Addr().String()

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `execfarm_executions_total{reason="timeout",runtime="python",state="timeout"} 1`) {
		t.Errorf("GET /metrics: %s\n%s", resp.Status, body)
	}
	if !strings.Contains(string(body), "go_goroutines") || !strings.Contains(string(body), "process_resident_memory_bytes") {
		t.Errorf("GET /metrics lacks the Go runtime and process metrics")
	}
	for _, c := range []struct{ method, path string }{{http.MethodPost, "/metrics"}, {http.MethodGet, "/"}, {http.MethodGet, "/debug/pprof/"}} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s %s = %s, want refused", c.method, c.path, resp.Status)
		}
	}
	lis.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve after the listener closed = %v, want nil", err)
	}
}

// TestServeBoundsConnections: past MaxConnections open connections, a new
// one is not served until one closes.
func TestServeBoundsConnections(t *testing.T) {
	m := New()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() { _ = m.Serve(lis) }()
	addr := lis.Addr().String()
	var idle []net.Conn
	for range MaxConnections {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	get := func() error {
		c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err == nil {
		t.Fatalf("a scrape was served with %d connections open", MaxConnections)
	}
	idle[0].Close()
	if err := get(); err != nil {
		t.Fatalf("scrape after a connection closed: %v", err)
	}
}

// TestCertificateExpiry: each scrape reads the served certificate's
// expiry; no series without TLS; none once unregistered.
func TestCertificateExpiry(t *testing.T) {
	m := New()
	notAfter, ok := time.Unix(1900000000, 0), true
	unregister := m.RegisterCertificate(func() (time.Time, bool) { return notAfter, ok })
	want := func(body string) {
		t.Helper()
		if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(body), "execfarm_tls_certificate_expiration_timestamp_seconds"); err != nil {
			t.Error(err)
		}
	}
	head := "# HELP execfarm_tls_certificate_expiration_timestamp_seconds When the TLS certificate the gRPC endpoint serves now expires, Unix time in seconds; re-read from its file as it is renewed. Absent without TLS.\n# TYPE execfarm_tls_certificate_expiration_timestamp_seconds gauge\n"
	want(head + "execfarm_tls_certificate_expiration_timestamp_seconds 1.9e+09\n")
	notAfter = time.Unix(1900086400, 0) // renewed
	want(head + "execfarm_tls_certificate_expiration_timestamp_seconds 1.9000864e+09\n")
	ok = false
	want("")
	ok = true
	unregister()
	want("")
	var none *Metrics
	none.RegisterCertificate(func() (time.Time, bool) { return notAfter, true })()
}

// TestOperations: start-up phases (known ones only), refusals, teardown
// and cgroup failures are counted, with every series there at zero first.
func TestOperations(t *testing.T) {
	m := New()
	count := func(name string, labels ...string) float64 {
		mfs, err := m.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, mt := range mf.GetMetric() {
				match := true
				for i := 0; i+1 < len(labels); i += 2 {
					for _, lp := range mt.GetLabel() {
						if lp.GetName() == labels[i] && lp.GetValue() != labels[i+1] {
							match = false
						}
					}
				}
				if match {
					if h := mt.GetHistogram(); h != nil {
						return float64(h.GetSampleCount())
					}
					return mt.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
	if count("execfarm_cgroup_errors_total", "op", "remove") != 0 || count("execfarm_queue_rejections_total", "reason", "queue_full") != 0 {
		t.Fatal("series missing before the first event")
	}
	m.SandboxStarted(PathOnDemand, time.Millisecond, []sandbox.Phase{{Name: "fork", Duration: time.Millisecond}, {Name: "made-up", Duration: 1}}, nil)
	m.SandboxStarted(PathOnDemand, 0, nil, fmt.Errorf("start: %w", &sandbox.CgroupError{Op: sandbox.CgroupCreate, Err: errors.New("EBUSY")}))
	m.SandboxClosed(errors.Join(errors.New("dir"), &sandbox.CgroupError{Op: sandbox.CgroupRemove, Err: errors.New("EBUSY")}))
	m.SandboxClosed(nil)
	m.CgroupFailed(errors.New("not a cgroup error"))
	m.QueueRejected(RejectQueueFull)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"execfarm_sandbox_start_phase_seconds", []string{"phase", "fork"}, 1},
		{"execfarm_sandbox_start_phase_seconds", []string{"phase", "made-up"}, -1},
		{"execfarm_cgroup_errors_total", []string{"op", "create"}, 1},
		{"execfarm_cgroup_errors_total", []string{"op", "remove"}, 1},
		{"execfarm_cgroup_errors_total", []string{"op", "read"}, 0},
		{"execfarm_sandbox_teardown_errors_total", nil, 1},
		{"execfarm_queue_rejections_total", []string{"reason", "queue_full"}, 1},
	} {
		if got := count(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestSessionMetrics: session sandboxes' creates, ends, file bytes and
// dropped events are counted, with every label value there from the start
// (a bounded set), and the live ones are read at scrape.
func TestSessionMetrics(t *testing.T) {
	m := New()
	if err := m.RegisterLoad(func() Load { return Load{Sessions: 3} }); err != nil {
		t.Fatal(err)
	}
	m.SessionCreated(nil)
	m.SessionCreated(nil)
	m.SessionCreated(errors.New("no uid range"))
	m.SessionEnded("expired")
	m.SessionFileBytes(FileIn, 100<<20)
	m.SessionFileBytes(FileOut, 7)
	m.SessionFileBytes(FileOut, 0)
	m.SessionEventsDropped(5)
	want := `
# HELP execfarm_session_events_dropped_total Events dropped from session sandboxes' event logs to keep them within their bounds.
# TYPE execfarm_session_events_dropped_total counter
execfarm_session_events_dropped_total 5
# HELP execfarm_session_file_bytes_total Bytes of files moved into (in: uploads) and out of (out: downloads) session sandboxes.
# TYPE execfarm_session_file_bytes_total counter
execfarm_session_file_bytes_total{direction="in"} 1.048576e+08
execfarm_session_file_bytes_total{direction="out"} 7
# HELP execfarm_session_sandboxes Session sandboxes live now (ending ones included, ones being created not).
# TYPE execfarm_session_sandboxes gauge
execfarm_session_sandboxes 3
# HELP execfarm_session_sandboxes_created_total Session sandbox creates, by outcome (ok, error; refusals by quota are not counted).
# TYPE execfarm_session_sandboxes_created_total counter
execfarm_session_sandboxes_created_total{outcome="error"} 1
execfarm_session_sandboxes_created_total{outcome="ok"} 2
# HELP execfarm_session_sandboxes_ended_total Session sandboxes that ended, by reason (deleted, expired, idle, shutdown, failed).
# TYPE execfarm_session_sandboxes_ended_total counter
execfarm_session_sandboxes_ended_total{reason="deleted"} 0
execfarm_session_sandboxes_ended_total{reason="expired"} 1
execfarm_session_sandboxes_ended_total{reason="failed"} 0
execfarm_session_sandboxes_ended_total{reason="idle"} 0
execfarm_session_sandboxes_ended_total{reason="shutdown"} 0
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"execfarm_session_events_dropped_total", "execfarm_session_file_bytes_total", "execfarm_session_sandboxes",
		"execfarm_session_sandboxes_created_total", "execfarm_session_sandboxes_ended_total"); err != nil {
		t.Error(err)
	}
	var nilM *Metrics
	nilM.SessionCreated(nil)
	nilM.SessionEnded("deleted")
	nilM.SessionFileBytes(FileIn, 1)
	nilM.SessionEventsDropped(1)
}
