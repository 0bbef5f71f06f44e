package supervisor

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/execfarm/execfarm/internal/probe"
	"github.com/execfarm/execfarm/isolation"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Services of grpc.health.v1 on the main endpoint, for clients that ask
// the API itself. Orchestrators ask the HTTP probes (ServeProbes):
// GET /healthz answers with HealthLiveness's state, GET /readyz runs the
// readiness checks (Readiness) and HealthReadiness follows their result.
const (
	// HealthLiveness is SERVING from New until the process exits: the
	// supervisor answers. A supervisor that cannot answer is wedged, and
	// a liveness probe restarts it. It stays SERVING during a graceful
	// shutdown, so that a pod draining its executions is not killed for
	// it, and it depends on no outside service (Kubernetes' API among
	// them): a control-plane outage must not restart every node's
	// supervisor.
	HealthLiveness = "liveness"
	// HealthReadiness is SERVING once the supervisor can start sandboxes,
	// that is once its fork server has first started, and until Shutdown
	// begins; in between, each run of the readiness checks (Readiness)
	// sets it to their result. The whole server ("") and its services
	// (prodisco.sandbox.v1.SandboxService, execfarm.v1.SessionService)
	// report the same.
	HealthReadiness = "readiness"
)

// readinessServices are the grpc.health.v1 names that follow readiness.
var readinessServices = []string{"", HealthReadiness, sandboxv1.SandboxService_ServiceDesc.ServiceName, execfarmv1.SessionService_ServiceDesc.ServiceName}

// Retries of the fork server's first start: from the first to the
// largest wait between two tries.
const (
	readyRetryFirst = 100 * time.Millisecond
	readyRetryMax   = 30 * time.Second
)

// The reasons GET /readyz gives when the supervisor is not ready. They
// are generic on purpose: the probe endpoint takes no credentials, so
// what went wrong (a path, an address, an error) goes to the log only.
const (
	// ReasonStarting: the fork server has not started yet (the first
	// start is retried with a growing wait, each failure logged).
	ReasonStarting = "starting"
	// ReasonShuttingDown: Shutdown has begun; it is never ready again.
	ReasonShuttingDown = "shutting down"
	// ReasonForkServer: the fork server has gone and could not be
	// started again.
	ReasonForkServer = "fork server unavailable"
	// ReasonCgroup: the parent of sandbox cgroups is not writable
	// (cgroup.ParentWritable), so no sandbox could start.
	ReasonCgroup = "cgroup parent not writable"
	// ReasonKubernetes: a Kubernetes API server is configured for
	// sandboxed code (Config.Kube) and does not answer GET /version with
	// the supervisor's credentials (hostproxy.Kube.Reachable).
	ReasonKubernetes = "kubernetes API unavailable"
)

// Bounds of the readiness checks, which anyone who reaches the probe
// endpoint can trigger: one run at a time, at most one per
// readyCheckEvery (callers in between get the last result), each run
// within readyCheckTimeout (a kubelet's probe has timeoutSeconds; the
// DaemonSet gives /readyz 5 s).
const (
	readyCheckEvery   = time.Second
	readyCheckTimeout = 3 * time.Second
)

// readyCheck is one readiness check: reason is what /readyz says when it
// fails, check's error (the details) goes to the log.
type readyCheck struct {
	reason string
	check  func(context.Context) error
}

// probeState is the supervisor's liveness and readiness.
type probeState struct {
	mu      sync.Mutex
	started bool // the fork server's first start succeeded
	ready   bool
	closing bool
	cancel  context.CancelFunc
	done    sync.WaitGroup

	// checkMu serialises runs of the readiness checks and guards what
	// follows.
	checkMu   sync.Mutex
	checks    []readyCheck
	every     time.Duration // readyCheckEvery; tests change it
	checkedAt time.Time     // of the last run; zero = none yet
	reason    string        // its result, "" = ready
	logged    string        // the reason and details last logged, "" = ready
	runs      int           // runs so far (tests)
}

// readyChecks are the checks Readiness runs once the fork server has
// first started: it is alive and answers (sandbox.ForkServerCheck; it is
// started again if it has gone, as the next sandbox would), the cgroup
// parent is writable, and the Kubernetes
// API answers when one is configured.
func (s *Server) readyChecks() []readyCheck {
	checks := []readyCheck{
		{ReasonForkServer, func(context.Context) error {
			// A fork server that runs but cannot answer (stopped) is not
			// started again; it is not ready either.
			if err := sandbox.ForkServerCheck(); err != nil {
				return err
			}
			return sandbox.StartForkServer(&s.cfg.Sandbox)
		}},
		{ReasonCgroup, func(context.Context) error { return cgroup.ParentWritable(s.cfg.Sandbox.Cgroup) }},
	}
	if k := s.cfg.Kube; k != nil {
		checks = append(checks, readyCheck{ReasonKubernetes, k.Reachable})
	}
	return checks
}

// startHealth reports the supervisor live and, in a goroutine, starts the
// fork server and reports it ready when it has; until then, and when it
// cannot start (retried with a growing wait up to readyRetryMax, each
// failure logged), it is not ready. stopHealth ends the goroutine.
func (s *Server) startHealth() {
	s.probes.checks, s.probes.every = s.readyChecks(), readyCheckEvery
	s.health.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
	ctx, cancel := context.WithCancel(context.Background())
	s.probes.cancel = cancel
	s.probes.done.Add(1)
	go func() {
		defer s.probes.done.Done()
		wait := readyRetryFirst
		for {
			err := sandbox.StartForkServer(&s.cfg.Sandbox)
			if err == nil {
				s.probes.mu.Lock()
				s.probes.started = true
				s.probes.mu.Unlock()
				s.setReadiness(healthpb.HealthCheckResponse_SERVING)
				return
			}
			if errors.Is(err, isolation.ErrNotSupported) {
				s.log.Error("not ready: this platform cannot start sandboxes", "error", err)
				return
			}
			s.log.Error("not ready: the fork server did not start", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, readyRetryMax)
		}
	}()
}

// ready reports whether the supervisor is ready (HealthReadiness).
func (s *Server) ready() bool {
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	return s.probes.ready && !s.probes.closing
}

// setReadiness sets every readiness service to st, unless the supervisor
// is shutting down (then it stays NOT_SERVING).
func (s *Server) setReadiness(st healthpb.HealthCheckResponse_ServingStatus) {
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	if s.probes.closing {
		return
	}
	s.probes.ready = st == healthpb.HealthCheckResponse_SERVING
	for _, name := range readinessServices {
		s.health.SetServingStatus(name, st)
	}
}

// stopHealth reports the supervisor not ready (for good; it stays live)
// and waits for startHealth's goroutine to end.
func (s *Server) stopHealth() {
	s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
	s.probes.mu.Lock()
	s.probes.closing = true
	s.probes.mu.Unlock()
	if s.probes.cancel != nil {
		s.probes.cancel()
	}
	s.probes.done.Wait()
}

// Readiness runs the readiness checks and returns "" when the supervisor
// is ready, else the generic reason (Reason*): ReasonShuttingDown once
// Shutdown has begun, ReasonStarting until the fork server's first
// start, else the first of readyChecks that fails. A failing check's
// details are logged when they change, and a return to ready too. At
// most one run is in flight and one starts per readyCheckEvery; a caller
// in between gets the last run's result. Each run sets HealthReadiness
// (and the readiness metric) to its result.
func (s *Server) Readiness() string {
	s.probes.mu.Lock()
	closing, started := s.probes.closing, s.probes.started
	s.probes.mu.Unlock()
	switch {
	case closing:
		return ReasonShuttingDown
	case !started:
		return ReasonStarting
	}
	p := &s.probes
	p.checkMu.Lock()
	defer p.checkMu.Unlock()
	if !p.checkedAt.IsZero() && time.Since(p.checkedAt) < p.every {
		return p.reason
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyCheckTimeout)
	defer cancel()
	reason, detail := "", ""
	for _, c := range p.checks {
		if err := c.check(ctx); err != nil {
			reason, detail = c.reason, err.Error()
			break
		}
	}
	p.checkedAt, p.reason = time.Now(), reason
	p.runs++
	key := "" // what is logged: "" when ready
	if reason != "" {
		key = reason + "\x00" + detail
	}
	if key != p.logged {
		if reason != "" {
			s.log.Warn("not ready", "reason", reason, "error", detail)
		} else {
			s.log.Info("ready again")
		}
		p.logged = key
	}
	if reason == "" {
		s.setReadiness(healthpb.HealthCheckResponse_SERVING)
	} else {
		s.setReadiness(healthpb.HealthCheckResponse_NOT_SERVING)
	}
	return reason
}

// Paths of the HTTP probes (ProbeHandler), which deploy/ names.
const (
	LivenessPath  = "/healthz"
	ReadinessPath = "/readyz"
	StartupPath   = "/startupz"
)

// Bounds of the probe endpoint (ServeProbes), which anyone who reaches
// its address may call without credentials: a kubelet needs one
// connection and one request at a time, on a new connection each time.
// Connections are not kept alive and a request must arrive within
// probeReadTimeout, so a client holding every connection (idle, or
// sending a byte at a time) has each one closed within that time, and a
// probe queued behind them is accepted and answered within about
// probeReadTimeout: less than a kubelet's default probe timeout plus its
// retries.
const (
	probeMaxConnections = 64
	probeMaxHeaderBytes = 4 << 10
	probeReadTimeout    = 2 * time.Second
	probeWriteTimeout   = readyCheckTimeout + 5*time.Second
)

// ProbeHandler answers the HTTP probes of orchestrators:
//
//	GET /healthz  200 {"live":true} while the process serves (liveness:
//	              it depends on nothing outside the process, and stays
//	              200 while a shutdown drains executions)
//	GET /readyz   200 {"ready":true}, or 503 {"ready":false,"reason":R}
//	              with R one of the generic Reason* (Readiness; the
//	              details are in the log)
//	GET /startupz 200 {"started":true} once the fork server's first start
//	              has succeeded (and from then on), else 503
//	              {"started":false,"reason":"starting"}: for a startup
//	              probe, which must not depend on an outside service
//	              either, since a kubelet restarts a container whose
//	              startup probe keeps failing
//
// HEAD is answered as GET without the body; another method is 405, any
// other path 404. Bodies are application/json.
func (s *Server) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LivenessPath, func(w http.ResponseWriter, r *http.Request) {
		probe.Write(w, http.StatusOK, map[string]any{"live": true})
	})
	mux.HandleFunc("GET "+ReadinessPath, func(w http.ResponseWriter, r *http.Request) {
		if reason := s.Readiness(); reason != "" {
			probe.Write(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": reason})
			return
		}
		probe.Write(w, http.StatusOK, map[string]any{"ready": true})
	})
	mux.HandleFunc("GET "+StartupPath, func(w http.ResponseWriter, r *http.Request) {
		if !s.started() {
			probe.Write(w, http.StatusServiceUnavailable, map[string]any{"started": false, "reason": ReasonStarting})
			return
		}
		probe.Write(w, http.StatusOK, map[string]any{"started": true})
	})
	return mux
}

// started reports whether the fork server's first start has succeeded.
func (s *Server) started() bool {
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	return s.probes.started
}

// ServeProbes serves ProbeHandler over plain HTTP on lis, for the
// kubelet's httpGet probes (which speak neither TLS nor tokens), with at
// most probeMaxConnections connections, none kept alive, headers up to
// probeMaxHeaderBytes, and the timeouts above. It returns at once; stop
// closes lis and every connection and waits for the server to end.
func (s *Server) ServeProbes(lis net.Listener) (stop func()) {
	hs := &http.Server{
		Handler:           s.ProbeHandler(),
		ReadHeaderTimeout: probeReadTimeout,
		ReadTimeout:       probeReadTimeout,
		WriteTimeout:      probeWriteTimeout,
		MaxHeaderBytes:    probeMaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	hs.SetKeepAlivesEnabled(false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(netutil.LimitListener(lis, probeMaxConnections))
	}()
	return func() {
		_ = hs.Close()
		<-done
	}
}
