// Package metrics holds the supervisor's Prometheus metrics (DESIGN.md:
// the supervisor owns "metrics (Prometheus)") and serves them over HTTP.
//
// Metrics, all prefixed execfarm_ (times in seconds, as Prometheus names
// them):
//
//	executions_total{runtime,state,reason}   counter: terminal executions
//	execution_queue_wait_seconds             histogram: time queued
//	execution_run_seconds{runtime}           histogram: wall time in the sandbox
//	sandbox_starts_total{path,outcome}       counter: sandbox start-ups
//	sandbox_start_seconds{path}              histogram: successful start-ups
//	executions_running, executions_queued    gauges, read at scrape time
//	warm_pool_sandboxes{state}               gauge: ready, starting, in_use
//	warm_pool_size                           gauge: the pool's target size
//	host_proxy_requests_total{target,kind,outcome}
//	                                         counter: Kubernetes and Prometheus
//	                                         requests of sandboxed code
//	sandbox_start_phase_seconds{phase}       histogram: start-up phases
//	queue_rejections_total{reason}           counter: queue_full, queue_bytes, shutting_down
//	sandbox_teardown_errors_total            counter: destructions that failed
//	cgroup_errors_total{op}                  counter: create, read, write, remove
//	executions_max_concurrent, queue_capacity, uid_ranges, uid_ranges_in_use,
//	ready, build_info{version,goversion}     gauges, read at scrape time
//	tls_certificate_expiration_timestamp_seconds
//	                                         gauge: when the served TLS
//	                                         certificate expires (with TLS)
//	session_sandboxes                        gauge: session sandboxes live
//	session_sandboxes_created_total{outcome} counter: creates, ok or error
//	session_sandboxes_ended_total{reason}    counter: deleted, expired, idle,
//	                                         shutdown, failed
//	session_file_bytes_total{direction}      counter: bytes uploaded (in) and
//	                                         downloaded (out)
//	session_events_dropped_total             counter: events dropped from
//	                                         sandboxes' bounded event logs
//
// plus the gRPC server's grpc_server_* metrics (go-grpc-middleware's
// provider: calls by method and status code, handling time) and the Go
// runtime and process collectors.
package metrics

import (
	"cmp"
	"errors"
	"net"
	"net/http"
	"runtime"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/execfarm/execfarm/supervisor/transport"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Sandbox start paths: a warm-pool refill or a start on demand by an
// execution that found no ready sandbox.
const (
	PathWarmPool = "warm_pool"
	PathOnDemand = "on_demand"
	PathSession  = "session"
)

// Metrics are one supervisor's metrics, in a registry of their own. A nil
// *Metrics records nothing, so callers need no checks.
type Metrics struct {
	reg *prometheus.Registry

	grpc         *grpcprom.ServerMetrics
	executions   *prometheus.CounterVec
	queueWait    prometheus.Histogram
	runTime      *prometheus.HistogramVec
	starts       *prometheus.CounterVec
	startSeconds *prometheus.HistogramVec

	sessionsCreated *prometheus.CounterVec
	sessionsEnded   *prometheus.CounterVec
	fileBytes       *prometheus.CounterVec
	eventsDropped   prometheus.Counter

	ops operations
}

// latencyBuckets span a warm start (a few ms) to the default wall timeout
// (30 s), in seconds.
var latencyBuckets = []float64{.0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// New returns Metrics registered in a new registry, with the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(latencyBuckets))),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execfarm_executions_total",
			Help: "Executions that ended, by runtime, terminal state (completed, failed, timeout, cancelled) and termination reason (exited, timeout, cpu_time, memory, pids, output_limit, cancelled, signal, internal).",
		}, []string{"runtime", "state", "reason"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "execfarm_execution_queue_wait_seconds",
			Help:    "Time executions spent queued before they got a slot (or were cancelled), seconds.",
			Buckets: latencyBuckets,
		}),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "execfarm_execution_run_seconds",
			Help:    "Wall time of executions in their sandbox, from run to exit, seconds; executions stopped before they ran are not counted.",
			Buckets: latencyBuckets,
		}, []string{"runtime"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execfarm_sandbox_starts_total",
			Help: "Sandbox start-ups, by path (warm_pool, on_demand) and outcome (ok, error).",
		}, []string{"path", "outcome"}),
		startSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "execfarm_sandbox_start_seconds",
			Help:    "Time to start a sandbox until its worker serves, seconds, by path (warm_pool, on_demand).",
			Buckets: latencyBuckets,
		}, []string{"path"}),
	}
	m.sessionsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "execfarm_session_sandboxes_created_total",
		Help: "Session sandbox creates, by outcome (ok, error; refusals by quota are not counted).",
	}, []string{"outcome"})
	m.sessionsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "execfarm_session_sandboxes_ended_total",
		Help: "Session sandboxes that ended, by reason (deleted, expired, idle, shutdown, failed).",
	}, []string{"reason"})
	m.fileBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "execfarm_session_file_bytes_total",
		Help: "Bytes of files moved into (in: uploads) and out of (out: downloads) session sandboxes.",
	}, []string{"direction"})
	m.eventsDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "execfarm_session_events_dropped_total",
		Help: "Events dropped from session sandboxes' event logs to keep them within their bounds.",
	})
	for _, o := range []string{"ok", "error"} {
		m.sessionsCreated.WithLabelValues(o)
	}
	for _, r := range []string{"deleted", "expired", "idle", "shutdown", "failed"} {
		m.sessionsEnded.WithLabelValues(r)
	}
	for _, d := range []string{FileIn, FileOut} {
		m.fileBytes.WithLabelValues(d)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.grpc, m.executions, m.queueWait, m.runTime, m.starts, m.startSeconds,
		m.sessionsCreated, m.sessionsEnded, m.fileBytes, m.eventsDropped,
	)
	m.ops = newOperations()
	m.reg.MustRegister(m.ops.collectors()...)
	return m
}

// Directions of file bytes (SessionFileBytes).
const (
	FileIn  = "in"
	FileOut = "out"
)

// SessionCreated counts one session sandbox create that started a
// sandbox (err nil) or failed to.
func (m *Metrics) SessionCreated(err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.sessionsCreated.WithLabelValues(outcome).Inc()
}

// SessionEnded counts one session sandbox that ended for reason
// ("deleted", "expired", "idle", "shutdown", "failed").
func (m *Metrics) SessionEnded(reason string) {
	if m != nil {
		m.sessionsEnded.WithLabelValues(reason).Inc()
	}
}

// SessionFileBytes counts n bytes moved in direction (FileIn, FileOut).
func (m *Metrics) SessionFileBytes(direction string, n int64) {
	if m != nil && n > 0 {
		m.fileBytes.WithLabelValues(direction).Add(float64(n))
	}
}

// SessionEventsDropped counts n events dropped from an event log.
func (m *Metrics) SessionEventsDropped(n int) {
	if m != nil && n > 0 {
		m.eventsDropped.Add(float64(n))
	}
}

// Registerer is where further collectors go (the supervisor's load).
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Gatherer reads every metric (tests, and Handler).
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// ServerOptions returns the grpc.ServerOption that count every call of a
// grpc.Server; none for a nil *Metrics. After registering the services,
// call InitializeGRPC so that methods never called show zeros.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	if m == nil {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.grpc.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.grpc.StreamServerInterceptor()),
	}
}

// InitializeGRPC creates the zero series of every method registered on g.
func (m *Metrics) InitializeGRPC(g *grpc.Server) {
	if m != nil {
		m.grpc.InitializeMetrics(g)
	}
}

// ExecutionFinished counts one terminal execution. queueWait is its time
// queued; run its wall time in the sandbox, zero if it never ran.
func (m *Metrics) ExecutionFinished(runtime, state, reason string, queueWait, run time.Duration) {
	if m == nil {
		return
	}
	if runtime == "" {
		runtime = "unspecified"
	}
	m.executions.WithLabelValues(runtime, state, reason).Inc()
	m.queueWait.Observe(queueWait.Seconds())
	if run > 0 {
		m.runTime.WithLabelValues(runtime).Observe(run.Seconds())
	}
}

// SandboxStarted counts one sandbox start-up on path (PathWarmPool,
// PathOnDemand) that took d and ended with err; phases are its start phases (Sandbox.StartPhases), and a cgroup failure (sandbox.CgroupError) in err is counted too.
func (m *Metrics) SandboxStarted(path string, d time.Duration, phases []sandbox.Phase, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.starts.WithLabelValues(path, "error").Inc()
		m.CgroupFailed(err)
		return
	}
	m.starts.WithLabelValues(path, "ok").Inc()
	m.startSeconds.WithLabelValues(path).Observe(d.Seconds())
	m.startedPhases(phases)
}

// Bounds of the metrics endpoint: a scraper needs one connection and one
// request at a time, and the endpoint has no authentication, so whoever
// reaches it must not be able to take the supervisor's descriptors or
// memory. Past MaxScrapes requests at once the answer is 503; past
// MaxConnections connections new ones wait to be accepted.
const (
	MaxScrapes     = 4
	MaxConnections = 16
)

// Handler serves the metrics in Prometheus's text (or OpenMetrics)
// format, at most MaxScrapes at once.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true, MaxRequestsInFlight: MaxScrapes})
}

// Serve serves GET /metrics on lis until it is closed; it returns nil
// then. Nothing else is served: the listener's address is the whole
// surface, so bind it where only the scraper reaches. At most
// MaxConnections connections are open at once (x/net/netutil), each idle
// for at most 10 s.
func (m *Metrics) Serve(lis net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       10 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	// Transient accept errors (EMFILE...) are waited out, not spun on.
	lis = netutil.LimitListener(transport.BackoffListener(lis), MaxConnections)
	if err := srv.Serve(lis); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Load is the supervisor's state at one moment, read at every scrape.
type Load struct {
	Running, Queued int
	// Pool is the warm pool's state; zero without a pool.
	PoolSize, PoolReady, PoolStarting, PoolInUse int
	// Proxy counts the host proxy's requests so far.
	Proxy []ProxyCount
	// Sessions is how many session sandboxes live.
	Sessions int
	// MaxConcurrent and QueueSize are the supervisor's capacity: slots
	// and queue places (--max-concurrent, --queue-size).
	MaxConcurrent, QueueSize int
	// UIDRanges is how many sandbox uid ranges the supervisor has, and
	// UIDRangesInUse how many live sandboxes (or their remains) hold.
	UIDRanges, UIDRangesInUse int
	// MemoryBudgetBytes is the node's memory budget (--memory-budget) and
	// MemoryHeldBytes the memory limits of the sandboxes that hold it
	// now, bytes; both 0 without a budget.
	MemoryBudgetBytes, MemoryHeldBytes int64
	// Ready is the supervisor's readiness (its fork server has started,
	// it is not shutting down, and the last readiness check, if any,
	// passed).
	Ready bool
	// Version is the supervisor's version, for execfarm_build_info.
	Version string
}

// ProxyCount is how many requests of sandboxed code to Target
// ("kubernetes", "prometheus") of Kind (a Kubernetes verb, a Prometheus
// endpoint kind) ended with Outcome ("allowed", "denied", "error").
type ProxyCount struct {
	Target, Kind, Outcome string
	N                     int64
}

var (
	runningDesc   = prometheus.NewDesc("execfarm_executions_running", "Executions running in a sandbox now.", nil, nil)
	queuedDesc    = prometheus.NewDesc("execfarm_executions_queued", "Executions waiting for a slot now.", nil, nil)
	poolDesc      = prometheus.NewDesc("execfarm_warm_pool_sandboxes", "Warm-pool sandboxes now, by state (ready, starting, in_use).", []string{"state"}, nil)
	poolSizeDesc  = prometheus.NewDesc("execfarm_warm_pool_size", "Sandboxes the warm pool keeps started (--warm-pool).", nil, nil)
	proxyDesc     = prometheus.NewDesc("execfarm_host_proxy_requests_total", "Requests of sandboxed code through the host proxy, by target (kubernetes, prometheus), kind (verb or endpoint) and outcome (allowed, denied, error).", []string{"target", "kind", "outcome"}, nil)
	sessionsDesc  = prometheus.NewDesc("execfarm_session_sandboxes", "Session sandboxes live now (ending ones included, ones being created not).", nil, nil)
	maxConcDesc   = prometheus.NewDesc("execfarm_executions_max_concurrent", "Executions that may run at once (--max-concurrent).", nil, nil)
	queueCapDesc  = prometheus.NewDesc("execfarm_queue_capacity", "Executions that may wait for a slot (--queue-size); past it requests get RESOURCE_EXHAUSTED.", nil, nil)
	uidRangesDesc = prometheus.NewDesc("execfarm_uid_ranges", "Sandbox uid ranges the supervisor has, one per live sandbox at most.", nil, nil)
	uidInUseDesc  = prometheus.NewDesc("execfarm_uid_ranges_in_use", "Sandbox uid ranges held now, by live sandboxes or by the remains of one whose cgroup could not be removed.", nil, nil)
	budgetDesc    = prometheus.NewDesc("execfarm_memory_budget_bytes", "The node's memory budget (--memory-budget): the most the memory limits of live session sandboxes and running single-use executions may add up to, bytes.", nil, nil)
	budgetHeld    = prometheus.NewDesc("execfarm_memory_budget_held_bytes", "The memory limits of the live session sandboxes and running single-use executions now, bytes (within execfarm_memory_budget_bytes).", nil, nil)
	readyDesc     = prometheus.NewDesc("execfarm_ready", "1 when the supervisor is ready (its fork server has started, it is not shutting down, and the last /readyz check passed), else 0.", nil, nil)
	buildDesc     = prometheus.NewDesc("execfarm_build_info", "Always 1; the labels name the supervisor's version and the Go version it was built with.", []string{"version", "goversion"}, nil)
	loadDescs     = []*prometheus.Desc{runningDesc, queuedDesc, poolDesc, poolSizeDesc, proxyDesc, sessionsDesc,
		maxConcDesc, queueCapDesc, uidRangesDesc, uidInUseDesc, budgetDesc, budgetHeld, readyDesc, buildDesc}
	poolStateName = [...]string{"ready", "starting", "in_use"}
)

var certExpiryDesc = prometheus.NewDesc("execfarm_tls_certificate_expiration_timestamp_seconds",
	"When the TLS certificate the gRPC endpoint serves now expires, Unix time in seconds; re-read from its file as it is renewed. Absent without TLS.", nil, nil)

// RegisterCertificate makes every scrape read notAfter, the expiry of the
// certificate served now (ok false: no TLS, no series). It returns the
// function that unregisters it; with a nil *Metrics both do nothing.
func (m *Metrics) RegisterCertificate(notAfter func() (t time.Time, ok bool)) (unregister func()) {
	if m == nil {
		return func() {}
	}
	c := certCollector(notAfter)
	if err := m.reg.Register(c); err != nil {
		return func() {}
	}
	return func() { m.reg.Unregister(c) }
}

type certCollector func() (time.Time, bool)

func (c certCollector) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

func (c certCollector) Collect(ch chan<- prometheus.Metric) {
	if t, ok := c(); ok {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(t.Unix()))
	}
}

// RegisterLoad makes every scrape read load once. It fails if a load is
// registered already.
func (m *Metrics) RegisterLoad(load func() Load) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(loadCollector(load))
}

type loadCollector func() Load

func (c loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range loadDescs {
		ch <- d
	}
}

func (c loadCollector) Collect(ch chan<- prometheus.Metric) {
	l := c()
	ready := 0.0
	if l.Ready {
		ready = 1
	}
	for d, v := range map[*prometheus.Desc]float64{maxConcDesc: float64(l.MaxConcurrent), queueCapDesc: float64(l.QueueSize),
		uidRangesDesc: float64(l.UIDRanges), uidInUseDesc: float64(l.UIDRangesInUse), readyDesc: ready,
		budgetDesc: float64(l.MemoryBudgetBytes), budgetHeld: float64(l.MemoryHeldBytes)} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	ch <- prometheus.MustNewConstMetric(buildDesc, prometheus.GaugeValue, 1, cmp.Or(l.Version, "unknown"), runtime.Version())
	ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(l.Running))
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(l.Queued))
	ch <- prometheus.MustNewConstMetric(poolSizeDesc, prometheus.GaugeValue, float64(l.PoolSize))
	for i, n := range [...]int{l.PoolReady, l.PoolStarting, l.PoolInUse} {
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(n), poolStateName[i])
	}
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(l.Sessions))
	for _, p := range l.Proxy {
		ch <- prometheus.MustNewConstMetric(proxyDesc, prometheus.CounterValue, float64(p.N), p.Target, p.Kind, p.Outcome)
	}
}
