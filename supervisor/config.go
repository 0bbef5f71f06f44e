package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/profile"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/session"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit that `execfarm
// serve` sets unless GOMEMLIMIT does (runtime/debug.SetMemoryLimit), bytes.
// The supervisor's live memory is bounded (output per stream, retention,
// responses per call, queued bytes, the host proxy, connections); without
// a limit the Go heap grows to twice the live data before it collects,
// and under the attacks of the load test (TestSupervisorRSSUnderAttack)
// the RSS passed 512 MiB; with it, it stays under. Raise it (GOMEMLIMIT)
// with --max-concurrent or the output ceilings: a running execution may
// keep up to 2 × 64 MiB of output at the ceiling.
const DefaultMemoryLimit = 320 << 20

// NoQueue is Config.QueueSize for a server that lets no execution wait
// (`serve --queue-size 0`): Config's 0 is its default.
const NoQueue = -1

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Sandbox configures sandboxes (worker binary, cgroups, uid ranges).
	Sandbox sandbox.Config
	// MaxConcurrent is how many executions run at once; 0 = number of CPUs.
	MaxConcurrent int
	// QueueSize is how many executions may wait for a slot and its
	// memory; 0 = 1000, NoQueue = none (an execution that cannot run at
	// once is refused). New sets it to what the scheduler takes: 0 for
	// NoQueue.
	QueueSize int
	// WarmPool is how many sandboxes are kept started ahead of demand, with
	// the default limits; 0 = none. Sandbox.IDs needs a uid range for each
	// of them besides the MaxConcurrent running ones.
	WarmPool int
	// SandboxReuse is how many executions one warm sandbox may serve, with
	// a Reset between them (Sandbox.Reset says what a reset guarantees);
	// 0 or 1 = single-use. Above 1 it needs WarmPool: reset sandboxes go
	// back to the pool. Executions that do not end by their program's own
	// exit (timeout, cancel, OOM kill, signal...) never leave their sandbox
	// for another.
	SandboxReuse int
	// DefaultRuntime runs requests that name none; "" = goja.
	DefaultRuntime string
	// ErrorStyle is how the ProDisco service answers the requests where
	// seed 000's error table and ProDisco's own server differ:
	// ErrorStyleExecfarm ("" too), the table's statuses, or
	// ErrorStyleProDisco, ProDisco's server's answers (prodisco_style.go).
	ErrorStyle string
	// Defaults and Ceilings bound requests' ResourceLimits; zero values =
	// limits.Default() and limits.DefaultCeilings(). A memory ceiling
	// above MemoryBudgetBytes is lowered to it.
	Defaults, Ceilings limits.Set
	// MemoryBudgetBytes bounds the sum of the memory limits of the live
	// session sandboxes and the single-use executions holding a slot,
	// bytes (--memory-budget; package budget): a session create that does
	// not fit is refused, an execution waits in the queue. 0 = the host's
	// (host.Memory.DefaultBudgetBytes: MemTotal, or the supervisor's
	// cgroup's memory limit when smaller, less 1/8 of it and at least
	// 1 GiB). Idle warm-pool sandboxes are not counted: they run no
	// client code and hold no client files.
	MemoryBudgetBytes int64
	// MaxMemoryBytes is the ceiling on a request's memory limit, bytes
	// (--max-memory), over Ceilings.MemoryBytes; 0 = Ceilings' (8 GiB by
	// default), lowered to MemoryBudgetBytes. One above MemoryBudgetBytes
	// is an error.
	MaxMemoryBytes int64
	// Registry configures retention of finished executions.
	Registry registry.Config
	// Sessions configures session sandboxes (execfarm.v1.SessionService):
	// MaxSandboxes, MaxPerPrincipal, DefaultLifetime, MaxLifetime,
	// MaxExecs, Events, EndedRetention, DefaultRuntime; zero fields take
	// session's defaults. New sets its Backend (sandboxes of Sandbox),
	// Runner, Ceilings (Ceilings), IDs (the node's, as executions'),
	// Metrics and Logger. Every session
	// sandbox holds a uid range of Sandbox.IDs for its life: the pool
	// needs one for each of MaxSandboxes besides the executions'.
	Sessions session.Config
	// Profiles are the sandbox profiles a session sandbox's create may
	// name (package profile); nil = only profile.DefaultName, the
	// server's defaults. New checks each against Defaults, Ceilings and
	// the lifetime ceiling.
	Profiles *profile.Set
	// MaxLongPoll bounds GetExecution(wait=true) when the call has no
	// deadline; 0 = 60 s.
	MaxLongPoll time.Duration
	// Node configures the node runtime; nil = no runtime bundle, and
	// requests for node get UNIMPLEMENTED. NodeRuntime fills it.
	Node *node.Config
	// Kube and Prometheus are the targets of the credential-free proxy
	// (nil: not configured). Either one needs Sandbox.Broker.
	Kube       *hostproxy.Kube
	Prometheus *hostproxy.Prometheus
	// Cache stores successful new TypeScript/JavaScript scripts and serves
	// ExecuteRequest.cached, ListCache and ClearCache, each principal and
	// each client of one its own scripts; nil disables it.
	Cache *cache.Store
	// Layers are the isolation layers reported by HealthCheck.
	Layers []*sandboxv1.IsolationLayer
	// Version is reported by HealthCheck.
	Version string
	// NodeName is the name of the node this supervisor runs on (on
	// Kubernetes, the pod's spec.nodeName): an RFC 1123 DNS subdomain.
	// Every execution id names it, so a request that reaches another node
	// is answered with the owner's name (package nodeid). "" = this
	// host's name (nodeid.HostNode).
	NodeName string
	// Logger receives the supervisor's logs; nil = hclog default.
	Logger hclog.Logger
	// Metrics receives the supervisor's metrics (executions, sandbox
	// start-ups, load, gRPC calls through ListenAndServe); nil = none.
	// One Metrics serves one Server.
	Metrics *metrics.Metrics
}

// Endpoints of the credential-free proxies inside every sandbox (the
// worker listens on them in the sandbox's network namespace).
const (
	SandboxKubeURL       = "http://127.0.0.1:8001"
	SandboxPrometheusURL = "http://127.0.0.1:9090"
)

// FindWorker returns the worker binary: explicit if set, else
// $EXECFARM_WORKER, else execfarm-worker next to the running executable,
// else on $PATH.
func FindWorker(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv("EXECFARM_WORKER")
	}
	if explicit != "" {
		p, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("supervisor: worker binary: %w", err)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("supervisor: worker binary: %w", err)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "execfarm-worker")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("execfarm-worker")
	if err != nil {
		return "", errors.New("supervisor: execfarm-worker not found next to execfarm nor on $PATH (set --worker or EXECFARM_WORKER)")
	}
	return filepath.Abs(p)
}

// NodeRuntime configures cfg for the node runtime when a runtime bundle is
// installed (node.FindBundle with dir; "" = the default places): the bundle
// is bound read-only into sandboxes and SANDBOX_ALLOWED_MODULES (getenv)
// overrides the allow-list. Without a bundle it returns false and cfg is
// unchanged (node requests get UNIMPLEMENTED); a malformed allow-list is an
// error.
func NodeRuntime(cfg *Config, dir string, getenv func(string) string) (bool, error) {
	bundle, err := node.FindBundle(dir)
	if err != nil {
		if dir != "" {
			return false, err
		}
		return false, nil
	}
	allowed, err := node.ParseAllowedModules(getenv(node.AllowedModulesEnv))
	if err != nil {
		return false, err
	}
	cfg.Node = &node.Config{AllowedModules: allowed}
	cfg.Sandbox.Binds = append(cfg.Sandbox.Binds, rootfs.Bind{Source: bundle, Target: node.SandboxDir})
	return true, nil
}

// HostAccess configures credential-free Kubernetes and Prometheus access
// for sandboxed code: the kubeconfig at kubeconfig (client-go's loading
// rules: "" uses $KUBECONFIG, ~/.kube/config, then the in-cluster config;
// none at all leaves Kubernetes off) under policy, and the Prometheus server
// at promURL ("" = off). It enables the sandbox broker and points the node
// runtime's kc and PROMETHEUS_URL at the loopback proxies.
func HostAccess(cfg *Config, kubeconfig string, policy hostproxy.KubePolicy, promURL string) error {
	kube, err := hostproxy.LoadKube(kubeconfig, policy)
	if err != nil {
		return err
	}
	prom, err := hostproxy.NewPrometheus(promURL)
	if err != nil {
		return err
	}
	cfg.Kube, cfg.Prometheus = kube, prom
	if kube == nil && prom == nil {
		return nil
	}
	cfg.Sandbox.Broker = true
	if cfg.Node != nil {
		if kube != nil {
			cfg.Node.KubeServer = SandboxKubeURL
		}
		if prom != nil {
			cfg.Node.PrometheusURL = SandboxPrometheusURL
		}
	}
	return nil
}
