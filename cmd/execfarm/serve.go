package main

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/profile"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/session"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// supervisorConfig is cfg as the flags give it, in supervisor.Config's
// terms: `--queue-size 0` (none may wait) is supervisor.NoQueue, since
// the Config's 0 is its default of 1000.
func supervisorConfig(cfg supervisor.Config) supervisor.Config {
	if cfg.QueueSize == 0 {
		cfg.QueueSize = supervisor.NoQueue
	}
	return cfg
}

func serveCmd() *cobra.Command {
	var (
		tc             transport.Config
		cfg            supervisor.Config
		worker         string
		goja           string
		logLevel       string
		logFormat      string
		cgroupParent   string
		uidBase        uint32
		allowDegraded  []string
		grace          time.Duration
		retention      time.Duration
		cacheDir       string
		nodeBundle     string
		kubeconfig     string
		kubeVerbs      []string
		kubeNamespaces []string
		promURL        string
		defaultTimeout int64
		metricsAddr    string
		maxLifetime    time.Duration
		probeAddr      string
		profilesPath   string
		memoryBudget   quantityFlag
		maxMemory      quantityFlag
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the supervisor: serve the gRPC API and run executions in sandboxes",
		RunE: func(cmd *cobra.Command, args []string) error {
			// cobra parses any integer or duration; these count or last.
			for _, bad := range []struct {
				flag string
				bad  bool
				want string
			}{
				{"--warm-pool", cfg.WarmPool < 0, "0 or more"},
				{"--max-concurrent", cfg.MaxConcurrent < 0, "0 (the number of CPUs) or more"},
				{"--queue-size", cfg.QueueSize < 0, "0 or more"},
				{"--default-timeout-ms", defaultTimeout < 0, "0 (30000) or more"},
				{"--grace", grace < 0, "0 or more"},
				{"--retention", retention < time.Millisecond, "1ms or more"},
			} {
				if bad.bad {
					v := cmd.Flags().Lookup(strings.TrimPrefix(bad.flag, "--")).Value.String()
					return fmt.Errorf("%s %s: want %s", bad.flag, v, bad.want)
				}
			}
			if cfg.ErrorStyle != supervisor.ErrorStyleExecfarm && cfg.ErrorStyle != supervisor.ErrorStyleProDisco {
				return fmt.Errorf("--error-style %q: want %s or %s", cfg.ErrorStyle, supervisor.ErrorStyleExecfarm, supervisor.ErrorStyleProDisco)
			}
			// The Go runtime's soft memory limit, unless GOMEMLIMIT sets
			// one: freed output buffers go back to the kernel instead of
			// waiting for the heap to double (supervisor.DefaultMemoryLimit).
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(supervisor.DefaultMemoryLimit)
			}
			var err error
			if cfg.MemoryBudgetBytes, err = memoryBudget.bytes("--memory-budget"); err != nil {
				return err
			}
			if cfg.MaxMemoryBytes, err = maxMemory.bytes("--max-memory"); err != nil {
				return err
			}
			if cfg.MemoryBudgetBytes > 0 && cfg.MaxMemoryBytes > cfg.MemoryBudgetBytes {
				return fmt.Errorf("--max-memory %s: want at most --memory-budget %s (no sandbox over the budget can ever start)", maxMemory.String(), memoryBudget.String())
			}
			flagsChooseTransport(cmd.Flags(), &tc)
			if tc, err = transport.FromEnv(tc, os.Getenv); err != nil {
				return err
			}
			if err := tc.CheckToken(); err != nil {
				return err
			}
			if cfg.Sandbox.WorkerBinary, err = supervisor.FindWorker(worker); err != nil {
				return err
			}
			cfg.Sandbox.GojaBinary = cmp.Or(goja, os.Getenv("EXECFARM_GOJA"))
			level := hclog.LevelFromString(cmp.Or(logLevel, os.Getenv("EXECFARM_LOG_LEVEL"), "info"))
			if level == hclog.NoLevel {
				return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", cmp.Or(logLevel, os.Getenv("EXECFARM_LOG_LEVEL")))
			}
			format := cmp.Or(logFormat, os.Getenv("EXECFARM_LOG_FORMAT"), "text")
			if format != "text" && format != "json" {
				return fmt.Errorf("--log-format %q: want text or json", format)
			}
			log := hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: level, Exclude: sandbox.ExpectedExit, JSONFormat: format == "json"})
			cfg.Logger = log
			cfg.Sandbox.Logger = log
			cfg.Version = version
			cfg.NodeName = cmp.Or(cfg.NodeName, os.Getenv("EXECFARM_NODE_NAME"))
			cfg.Sandbox.Cgroup = cgroup.Config{Parent: cgroupParent}
			if cfg.MaxConcurrent == 0 {
				cfg.MaxConcurrent = defaultConcurrency()
			}
			if cfg.Sessions.MaxSandboxes <= 0 || cfg.Sessions.MaxPerPrincipal < 0 || cfg.Sessions.MaxExecs <= 0 || maxLifetime < 0 || cfg.Sessions.DefaultLifetime <= 0 {
				return errors.New("--max-sandboxes, --sandbox-max-execs and --sandbox-default-lifetime must be positive; --max-sandboxes-per-principal and --sandbox-max-lifetime not negative")
			}
			cfg.Sessions.MaxLifetime = maxLifetime
			if maxLifetime == 0 {
				cfg.Sessions.MaxLifetime = session.NoLifetimeCeiling
			}
			// Every live sandbox holds a uid range: each running
			// execution's, each warm one's, each session's.
			liveSandboxes := cfg.MaxConcurrent + cfg.WarmPool + cfg.Sessions.MaxSandboxes
			cfg.Sandbox.IDs = sandbox.NewIDPool(uidBase, 0, uidSlots(liveSandboxes))
			cfg.Registry = registry.Config{RetentionMs: retention.Milliseconds()}
			if defaultTimeout > 0 {
				cfg.Defaults = limits.Default()
				cfg.Defaults.TimeoutMs = defaultTimeout
			}
			allowed, err := probe.ParseAllowDegraded(allowDegraded)
			if err != nil {
				return err
			}
			if slices.Contains(allowed, probe.Seccomp) {
				cfg.Sandbox.NoSeccomp = true
			}
			pc, err := hostProbeConfig(cfg.Sandbox.Cgroup, uidBase, liveSandboxes)
			if err != nil {
				return err
			}
			layers, err := host.Check(pc, allowed)
			if err != nil {
				return err
			}
			for _, l := range layers {
				if slices.Contains(allowed, l.Name) {
					log.Warn("DEGRADED: isolation layer disabled by --allow-degraded", "layer", l.Name, "detail", l.Detail)
				}
			}
			cfg.Layers = layers
			if os.Getpid() == 1 {
				// Workers are children of the fork server; if it dies, the
				// kernel hands them to PID 1, which must reap them.
				log.Warn("execfarm serve is PID 1 without an init: orphaned sandbox processes will stay as zombies and hold their uid ranges; run it under an init (tini, docker run --init), as the image does")
			}
			if cacheDir == "" {
				cacheDir = os.Getenv("SCRIPTS_CACHE_DIR")
			}
			if cacheDir == "" {
				cacheDir = defaultCacheDir
			}
			// Before any clean-up: a second serve sharing the cgroup parent
			// or state directory would kill the first's sandboxes, one whose
			// uid window overlaps could give two sandboxes one host uid, one
			// sharing the script cache would clear its scripts.
			release, err := host.Lock(host.Resources{Cgroup: cfg.Sandbox.Cgroup, UIDBase: uidBase, UIDRanges: uidSlots(liveSandboxes),
				StateDir: cfg.Sandbox.StateDir, ScriptsCacheDir: cacheDir}, host.LockDir())
			if err != nil {
				return err
			}
			defer release()
			if n, err := cgroup.Cleanup(cfg.Sandbox.Cgroup); err != nil {
				log.Warn("clean up leftover sandbox cgroups", "error", err)
			} else if n > 0 {
				log.Info("removed leftover sandbox cgroups", "count", n)
			}
			if n, err := host.CleanupStateDir(cfg.Sandbox.StateDir); err != nil {
				log.Warn("clean up leftover sandbox state", "error", err)
			} else if n > 0 {
				log.Info("removed leftover sandbox state directories", "count", n)
			}
			if cfg.Cache, err = cache.OpenStore(cache.Config{Dir: cacheDir}); err != nil {
				return err
			}
			if ok, err := supervisor.NodeRuntime(&cfg, nodeBundle, os.Getenv); err != nil {
				return err
			} else if !ok {
				log.Warn("node runtime unavailable: no runtime bundle found (make bundle, or --node-bundle)")
			}
			if promURL == "" {
				promURL = os.Getenv("PROMETHEUS_URL")
			}
			policy, err := kubePolicy(kubeVerbs, kubeNamespaces, os.Getenv)
			if err != nil {
				return err
			}
			if err := supervisor.HostAccess(&cfg, kubeconfig, policy, promURL); err != nil {
				return err
			}
			if cfg.Kube != nil {
				ns := any(policy.Namespaces)
				if len(policy.Namespaces) == 0 {
					ns = "all"
				}
				log.Info("kubernetes access for sandboxes", "context", cfg.Kube.Context(), "verbs", policy.Verbs, "namespaces", ns)
			}
			if metricsAddr = cmp.Or(metricsAddr, os.Getenv("EXECFARM_METRICS_ADDRESS")); metricsAddr != "" {
				cfg.Metrics = metrics.New()
				lis, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return fmt.Errorf("--metrics-address: %w", err)
				}
				defer lis.Close()
				go func() {
					if err := cfg.Metrics.Serve(lis); err != nil {
						log.Error("metrics endpoint stopped", "error", err)
					}
				}()
				log.Info("serving metrics", "address", "http://"+lis.Addr().String()+"/metrics")
			}
			if profilesPath = cmp.Or(profilesPath, os.Getenv("EXECFARM_SANDBOX_PROFILES")); profilesPath != "" {
				if cfg.Profiles, err = profile.Load(profilesPath); err != nil {
					return err
				}
				log.Info("sandbox profiles", "file", profilesPath, "profiles", cfg.Profiles.Names())
			}
			s, err := supervisor.New(supervisorConfig(cfg))
			if err != nil {
				return err
			}
			if probeAddr = cmp.Or(probeAddr, os.Getenv("EXECFARM_PROBE_ADDRESS")); probeAddr != "" {
				lis, err := net.Listen("tcp", probeAddr)
				if err != nil {
					_ = s.Shutdown(0)
					return fmt.Errorf("--probe-address: %w", err)
				}
				// Until the process exits: a draining supervisor stays live.
				defer s.ServeProbes(lis)()
				log.Info("serving probes", "liveness", "http://"+lis.Addr().String()+"/healthz", "readiness", "http://"+lis.Addr().String()+"/readyz")
			}
			log.Info("starting", "version", version, "node", s.IDs().Node(), "transport", tc.Address(), "state_dir", cfg.Sandbox.StateDir,
				"cgroup_parent", cgroupParent, "uid_base", uidBase, "uid_ranges", uidSlots(liveSandboxes),
				"max_concurrent", cfg.MaxConcurrent, "queue_size", cfg.QueueSize, "warm_pool", cfg.WarmPool, "sandbox_reuse", cfg.SandboxReuse,
				"max_sandboxes", cfg.Sessions.MaxSandboxes, "default_runtime", cfg.DefaultRuntime, "error_style", cfg.ErrorStyle, "node_runtime", cfg.Node != nil,
				"default_limits", s.DefaultLimits(), "scripts_cache_dir", cacheDir, "retention", retention.String(), "grace", grace.String(),
				"kubernetes", cfg.Kube != nil, "prometheus", cfg.Prometheus != nil, "metrics_address", metricsAddr,
				"degraded", allowed, "log_level", level.String(), "log_format", format)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = supervisor.ListenAndServe(ctx, s, tc, grace, func(addr string) {
				log.Info("serving", "address", addr, "node", s.IDs().Node(), "max_concurrent", cfg.MaxConcurrent, "queue_size", cfg.QueueSize, "warm_pool", cfg.WarmPool,
					"max_sandboxes", cfg.Sessions.MaxSandboxes, "bearer_token", tc.TokenPath != "" || tc.Token != "")
			})
			// Every sandbox is gone: leave no empty cgroup parent behind.
			if rerr := cgroup.RemoveParent(cfg.Sandbox.Cgroup); rerr != nil {
				log.Warn("remove the sandbox cgroup parent", "error", rerr)
			}
			if err != nil {
				log.Warn("stopped", "error", err)
			} else {
				log.Info("stopped")
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&tc.SocketPath, "socket", "", "unix socket path (env SANDBOX_SOCKET_PATH; default "+transport.DefaultSocketPath+")")
	f.BoolVar(&tc.UseTCP, "tcp", false, "listen on TCP instead of the unix socket (env SANDBOX_USE_TCP; default: TCP when a host or a port is given, by flag or environment)")
	f.StringVar(&tc.TCPHost, "host", "", "TCP host to bind (env SANDBOX_TCP_HOST; default 127.0.0.1)")
	f.IntVar(&tc.TCPPort, "port", 0, "TCP port (env SANDBOX_TCP_PORT; default 50051)")
	f.BoolVar(&tc.AllowInsecureRemote, "allow-insecure-tcp", false, "allow insecure TCP on a non-loopback address")
	f.StringVar(&tc.TokenPath, "token-file", "", "require the bearer token in this file on every call but grpc.health.v1 (env EXECFARM_TOKEN_FILE, or the token itself in EXECFARM_TOKEN; default: none)")
	f.StringVar(&cfg.NodeName, "node-name", "", "this node's name, which every execution id names (env EXECFARM_NODE_NAME; on Kubernetes the pod's spec.nodeName; default: the host name)")
	f.IntVar(&cfg.MaxConcurrent, "max-concurrent", 0, "executions running at once (default: number of CPUs)")
	f.IntVar(&cfg.QueueSize, "queue-size", 1000, "executions that may wait for a slot and its memory; 0: none (an execution that cannot run at once is refused RESOURCE_EXHAUSTED)")
	f.IntVar(&cfg.WarmPool, "warm-pool", 0, "sandboxes kept started ahead of demand (default limits only; single-use unless --sandbox-reuse)")
	f.StringVar(&cfg.DefaultRuntime, "default-runtime", "goja", "runtime of requests that name none: goja, node, shell, python")
	f.StringVar(&cfg.ErrorStyle, "error-style", supervisor.ErrorStyleExecfarm, "how the ProDisco service answers where seed 000's error table and ProDisco's server differ: execfarm (the table's gRPC statuses) or prodisco (ProDisco's success: false answers; docs/COMPATIBILITY.md)")
	f.StringVar(&worker, "worker", "", "execfarm-worker binary (env EXECFARM_WORKER; default: next to execfarm, then $PATH)")
	f.IntVar(&cfg.SandboxReuse, "sandbox-reuse", 1, "executions one warm sandbox may serve, reset in between (README: Sandbox reuse); 1 = single-use; needs --warm-pool")
	f.StringVar(&logFormat, "log-format", "", "text or json: one JSON object per line (env EXECFARM_LOG_FORMAT; default text)")
	f.StringVar(&logLevel, "log-level", "", "trace, debug (every sandbox start with its phases, warm-pool takes and refills), info, warn or error (env EXECFARM_LOG_LEVEL; default info)")
	f.StringVar(&goja, "goja", "", "execfarm-goja binary, bound into every sandbox (env EXECFARM_GOJA; default: next to the worker binary)")
	f.StringVar(&cfg.Sandbox.StateDir, "state-dir", "/run/execfarm", "directory for per-sandbox sockets and mountpoints")
	f.StringVar(&cgroupParent, "cgroup-parent", cgroup.DefaultParent, "parent cgroup of sandbox cgroups (nested under the supervisor's own)")
	f.Uint32Var(&uidBase, "uid-base", host.DefaultUIDBase, "first host uid of the sandboxes' uid ranges (65536 ids each)")
	f.StringSliceVar(&allowDegraded, "allow-degraded", nil, "run without these isolation layers (only seccomp can be); never silently")
	f.DurationVar(&grace, "grace", 10*time.Second, "on SIGTERM, how long running executions may finish before they are killed")
	f.DurationVar(&retention, "retention", 5*time.Minute, "how long finished executions stay readable")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the supervisor's Kubernetes access (env KUBECONFIG; else ~/.kube/config, then in-cluster)")
	f.StringSliceVar(&kubeVerbs, "kube-verbs", nil, "Kubernetes verbs sandboxed code may use (default get,list,watch)")
	f.StringSliceVar(&kubeNamespaces, "kube-namespaces", nil, "namespaces sandboxed code may read, or * for all (env EXECFARM_KUBE_NAMESPACES, a comma list; default: all; the shipped DaemonSet sets what its RBAC grants)")
	f.StringVar(&promURL, "prometheus-url", "", "Prometheus server sandboxed code may query, read-only (env PROMETHEUS_URL)")
	f.StringVar(&nodeBundle, "node-bundle", "", "node runtime bundle directory (env EXECFARM_NODE_BUNDLE; default: node-bundle next to execfarm, then runtime/node/bundle)")
	f.StringVar(&cacheDir, "scripts-cache-dir", "", "directory of cached scripts (env SCRIPTS_CACHE_DIR; default "+defaultCacheDir+")")
	f.Int64Var(&defaultTimeout, "default-timeout-ms", 0, "default wall-clock timeout in ms (default 30000)")
	f.StringVar(&probeAddr, "probe-address", "", "serve the HTTP probes GET /healthz (liveness) and GET /readyz (readiness) alone, in plaintext, at ADDRESS, e.g. :9465 (env EXECFARM_PROBE_ADDRESS; default: off)")
	f.StringVar(&metricsAddr, "metrics-address", "", "serve Prometheus metrics at http://ADDRESS/metrics, e.g. 127.0.0.1:9464 (env EXECFARM_METRICS_ADDRESS; default: off)")
	f.Var(&memoryBudget, "memory-budget", "the most the memory limits of live session sandboxes and running single-use executions may add up to, bytes with units, e.g. 16Gi: a session create over it is refused RESOURCE_EXHAUSTED, an execution waits in the queue (default: MemTotal, or the supervisor's cgroup memory limit when smaller, less 1/8 of it and at least 1Gi kept for the host)")
	f.Var(&maxMemory, "max-memory", "ceiling on the memory limit a request or a session sandbox may ask for, bytes with units, e.g. 4Gi; over it: INVALID_ARGUMENT (default: the smaller of 8Gi and --memory-budget; over --memory-budget is refused)")
	f.IntVar(&cfg.Sessions.MaxSandboxes, "max-sandboxes", session.DefaultMaxSandboxes, "session sandboxes that may live at once (each holds its memory limit and a uid range for its life)")
	f.IntVar(&cfg.Sessions.MaxPerPrincipal, "max-sandboxes-per-principal", 0, "session sandboxes one principal may hold (default: a quarter of --max-sandboxes, at least 1)")
	f.DurationVar(&cfg.Sessions.DefaultLifetime, "sandbox-default-lifetime", session.DefaultLifetime, "lifetime of a session sandbox whose create names none")
	f.DurationVar(&maxLifetime, "sandbox-max-lifetime", session.DefaultMaxLifetime, "ceiling on session sandbox lifetimes; 0 = none (then shutdown_after_seconds 0, no expiry, is allowed)")
	f.StringVar(&profilesPath, "sandbox-profiles", "", "YAML file of sandbox profiles: named runtime, limits and lifetime defaults a session sandbox's create may name (README: Sandbox profiles; env EXECFARM_SANDBOX_PROFILES; default: only the profile default, the server's defaults)")
	f.IntVar(&cfg.Sessions.MaxExecs, "sandbox-max-execs", session.DefaultMaxExecs, "execs one session sandbox holds at once, pending and running")
	return cmd
}

// kubePolicy is the policy serve applies to sandboxed code's Kubernetes
// requests: verbs from --kube-verbs (default get, list, watch); namespaces
// from --kube-namespaces, else EXECFARM_KUBE_NAMESPACES (getenv), a comma
// list; "*" or nothing at all means every namespace. Each name must be a
// namespace name (an RFC 1123 label).
func kubePolicy(verbs, namespaces []string, getenv func(string) string) (hostproxy.KubePolicy, error) {
	if len(namespaces) == 0 {
		if v := getenv("EXECFARM_KUBE_NAMESPACES"); v != "" {
			namespaces = strings.Split(v, ",")
		}
	}
	var names []string
	for _, n := range namespaces {
		n = strings.TrimSpace(n)
		switch {
		case n == "*" && len(namespaces) == 1:
			return hostproxy.KubePolicy{Verbs: verbs}, nil
		case n == "":
			continue
		}
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return hostproxy.KubePolicy{}, fmt.Errorf("--kube-namespaces: %q is not a namespace name: %s", n, strings.Join(msgs, "; "))
		}
		names = append(names, n)
	}
	if len(namespaces) > 0 && len(names) == 0 {
		return hostproxy.KubePolicy{}, errors.New("--kube-namespaces: no namespace named (use * for all)")
	}
	return hostproxy.KubePolicy{Verbs: verbs, Namespaces: names}, nil
}

// uidSlots is the number of sandbox uid ranges serve reserves: one per
// sandbox that may live at once, plus room for sandboxes still being torn
// down.
func uidSlots(liveSandboxes int) int { return liveSandboxes + 8 }

// hostProbeConfig is what serve and doctor probe: the cgroup and the uid
// window serve would use. --uid-base 0 is refused: sandbox root would be
// host root (and probe.Config would read 0 as its default).
func hostProbeConfig(cg cgroup.Config, uidBase uint32, liveSandboxes int) (probe.Config, error) {
	if uidBase == 0 {
		return probe.Config{}, errors.New("--uid-base 0 would make sandbox root the host's root")
	}
	slots := uidSlots(liveSandboxes)
	// The last id of the window must be a valid uid (2^32-1 is reserved:
	// (uid_t)-1); checked first, or every namespace trial of the probe
	// fails with EINVAL and the report blames the kernel.
	if end := uint64(uidBase) + uint64(slots)*65536; end > 1<<32-1 {
		return probe.Config{}, fmt.Errorf("--uid-base %d: %d sandbox uid ranges of 65536 end at %d, past the largest uid %d", uidBase, slots, end-1, uint64(1<<32-2))
	}
	return probe.Config{Cgroup: cg, UIDBase: uidBase, UIDSlots: slots}, nil
}

// defaultCacheDir replaces the reference's /tmp/prodisco-scripts: a fixed
// name in a world-writable directory could be planted by another user.
const defaultCacheDir = "/var/lib/execfarm/scripts"

func defaultConcurrency() int {
	n := runtimeNumCPU()
	if n < 1 {
		return 1
	}
	return n
}
