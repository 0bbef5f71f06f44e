package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// Reasons a request was refused admission (QueueRejected).
const (
	RejectQueueFull    = "queue_full"
	RejectShuttingDown = "shutting_down"
	RejectQueueBytes   = "queue_bytes"
	RejectMemoryBudget = "memory_budget"
)

// startPhases are the phases of a sandbox start-up the supervisor times
// (sandbox.Sandbox.StartPhases); others are not recorded, so that the
// phase label stays bounded.
var startPhases = []string{"prepare", "cgroup", "fork", "handshake", "ipc", "dispense"}

// operations are the metrics an operator watches the node's health by:
// start-up phases, refusals, teardown and cgroup failures.
type operations struct {
	startPhase     *prometheus.HistogramVec
	rejections     *prometheus.CounterVec
	teardownErrors prometheus.Counter
	cgroupErrors   *prometheus.CounterVec
}

// phaseBuckets span a phase of a start-up: tenths of a millisecond to a
// second, in seconds.
var phaseBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}

func newOperations() operations {
	o := operations{
		startPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "execfarm_sandbox_start_phase_seconds",
			Help:    "Time of each phase of successful sandbox start-ups on the supervisor's side, seconds, by phase (prepare, cgroup, fork, handshake, ipc, dispense).",
			Buckets: phaseBuckets,
		}, []string{"phase"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execfarm_queue_rejections_total",
			Help: "Executions refused admission, by reason (queue_full: RESOURCE_EXHAUSTED; queue_bytes: RESOURCE_EXHAUSTED, the queued requests' byte budget; memory_budget: RESOURCE_EXHAUSTED, a memory limit larger than the node's memory budget; shutting_down: UNAVAILABLE).",
		}, []string{"reason"}),
		teardownErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "execfarm_sandbox_teardown_errors_total",
			Help: "Sandboxes whose destruction failed in part (cgroup, host directory or worker left behind; the log says which).",
		}),
		cgroupErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "execfarm_cgroup_errors_total",
			Help: "Failed operations on sandbox cgroups, by operation (create, read, remove).",
		}, []string{"op"}),
	}
	// Every series exists from the start, so that rate() and increase()
	// see the first failure.
	for _, p := range startPhases {
		o.startPhase.WithLabelValues(p)
	}
	for _, r := range []string{RejectQueueFull, RejectQueueBytes, RejectMemoryBudget, RejectShuttingDown} {
		o.rejections.WithLabelValues(r)
	}
	for _, op := range []string{sandbox.CgroupCreate, sandbox.CgroupRead, sandbox.CgroupWrite, sandbox.CgroupRemove} {
		o.cgroupErrors.WithLabelValues(op)
	}
	return o
}

func (o operations) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.startPhase, o.rejections, o.teardownErrors, o.cgroupErrors}
}

// startedPhases records the phases of a successful start-up.
func (m *Metrics) startedPhases(phases []sandbox.Phase) {
	for _, p := range phases {
		for _, known := range startPhases {
			if p.Name == known {
				m.ops.startPhase.WithLabelValues(p.Name).Observe(p.Duration.Seconds())
			}
		}
	}
}

// QueueRejected counts an execution refused admission for reason
// (RejectQueueFull, RejectQueueBytes, RejectMemoryBudget,
// RejectShuttingDown).
func (m *Metrics) QueueRejected(reason string) {
	if m != nil {
		m.ops.rejections.WithLabelValues(reason).Inc()
	}
}

// SandboxClosed counts a sandbox's destruction that failed (err from
// sandbox.Sandbox.Close), and the cgroup failure in it; nil counts
// nothing.
func (m *Metrics) SandboxClosed(err error) {
	if m == nil || err == nil {
		return
	}
	m.ops.teardownErrors.Inc()
	m.CgroupFailed(err)
}

// CgroupFailed counts err if it holds a *sandbox.CgroupError, by its
// operation.
func (m *Metrics) CgroupFailed(err error) {
	var cg *sandbox.CgroupError
	if m != nil && errors.As(err, &cg) {
		m.ops.cgroupErrors.WithLabelValues(cg.Op).Inc()
	}
}
