package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/supervisor/hostproxy"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// DefaultUIDBase is the first host uid of sandbox uid ranges: far above
// ordinary users and the /etc/subuid ranges tools hand out from 100000.
const DefaultUIDBase = probe.DefaultUIDBase

// embeddedUIDBase is the first host uid of an embedded supervisor's
// window of probe.DefaultUIDSlots ranges: window 1 + pid%255 of
// [2^30, 2^31), so that concurrent embedded supervisors (two `execfarm
// run`s) rarely share a window and never share serve's default window 0.
// The host probe refuses to start when the window is in use.
func embeddedUIDBase(pid int) uint32 {
	const window = probe.DefaultUIDSlots * probe.DefaultUIDRangeSize
	return DefaultUIDBase + uint32(1+pid%255)*window
}

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

// embeddedPrefix begins the names of an embedded supervisor's cgroup
// parent and temporary directory; the pid of its process follows.
const embeddedPrefix = "execfarm-embedded-"

// EmbeddedRoot holds embedded supervisors' directories (socket and
// sandbox state): /tmp, not $TMPDIR, because sandbox workers pass through
// it by host path as unprivileged uids (a per-user TMPDIR is often 0700)
// and plugin socket paths must stay short.
const EmbeddedRoot = "/tmp"

// removeStaleEmbedded removes what embedded supervisors of processes that
// are gone left behind (an `execfarm run` killed with SIGKILL runs no
// clean-up): their cgroup parents next to the one this process would use
// (in cg's hierarchy position; cg.Parent is ignored) and their temporary
// directories. A pid that is alive again, for another process, keeps its
// leftovers: nothing of a live process is ever removed. Best effort.
func removeStaleEmbedded(cg cgroup.Config) {
	alive := func(name string) bool {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, embeddedPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			return true // not ours to judge
		}
		err = syscall.Kill(pid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	cg.Parent = "/" + embeddedPrefix + strconv.Itoa(os.Getpid())
	if parents, err := cgroup.SiblingParents(cg, embeddedPrefix); err == nil {
		for _, p := range parents {
			if alive(path.Base(p)) {
				continue
			}
			stale := cg
			stale.Parent = p
			if _, err := cgroup.Cleanup(stale); err == nil {
				_ = cgroup.RemoveParent(stale)
			}
		}
	}
	if entries, err := os.ReadDir(EmbeddedRoot); err == nil {
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), embeddedPrefix) && !alive(e.Name()) {
				_ = os.RemoveAll(filepath.Join(EmbeddedRoot, e.Name()))
			}
		}
	}
}

// Embedded starts a private supervisor for one client process (the CLI's
// `run` when no server is configured or reachable): a unix socket in a
// fresh temporary directory, its own cgroup parent, its own uid window
// (embeddedUIDBase) unless cfg.Sandbox.IDs is set (the host probe then
// checks the default window), executions in the foreground. It refuses
// to start as CheckHostConfig does; "seccomp" in allowDegraded sets
// cfg.Sandbox.NoSeccomp. stop shuts it down and removes everything it
// created.
func Embedded(ctx context.Context, cfg Config, allowDegraded []string) (tc transport.Config, stop func() error, err error) {
	removeStaleEmbedded(cfg.Sandbox.Cgroup)
	dir, err := os.MkdirTemp(EmbeddedRoot, embeddedPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return tc, nil, fmt.Errorf("supervisor: %w", err)
	}
	// Its sandboxes' state lives here too, not in the default state
	// directory that a serve owns (and cleans at start), so that a
	// supervisor killed with SIGKILL leaves it where removeStaleEmbedded
	// looks. Workers pass through it: 0711.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return tc, nil, fmt.Errorf("supervisor: %w", err)
	}
	if cfg.Sandbox.StateDir == "" {
		cfg.Sandbox.StateDir = dir
	}
	if cfg.Sandbox.Cgroup.Parent == "" {
		cfg.Sandbox.Cgroup.Parent = "/" + embeddedPrefix + strconv.Itoa(os.Getpid())
	}
	pc := probe.Config{Cgroup: cfg.Sandbox.Cgroup}
	if cfg.Sandbox.IDs == nil {
		pc.UIDBase, pc.UIDSlots = embeddedUIDBase(os.Getpid()), probe.DefaultUIDSlots
		cfg.Sandbox.IDs = sandbox.NewIDPool(pc.UIDBase, 0, pc.UIDSlots)
	}
	allowed, err := probe.ParseAllowDegraded(allowDegraded)
	if err != nil {
		os.RemoveAll(dir)
		return tc, nil, fmt.Errorf("supervisor: %w", err)
	}
	if slices.Contains(allowed, probe.Seccomp) {
		cfg.Sandbox.NoSeccomp = true
	}
	layers, err := CheckHostConfig(pc, allowed)
	if err != nil {
		os.RemoveAll(dir)
		return tc, nil, err
	}
	cfg.Layers = layers
	s, err := New(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return tc, nil, err
	}
	tc = transport.Config{SocketPath: filepath.Join(dir, "execfarm.sock")}
	sctx, cancel := context.WithCancel(ctx)
	readyc := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServe(sctx, s, tc, 2*time.Second, func(string) { close(readyc) })
	}()
	select {
	case <-readyc:
	case err := <-done:
		cancel()
		os.RemoveAll(dir)
		return tc, nil, err
	}
	stop = func() error {
		cancel()
		err := <-done
		_, _ = cgroup.Cleanup(cfg.Sandbox.Cgroup)
		_ = cgroup.RemoveParent(cfg.Sandbox.Cgroup)
		os.RemoveAll(dir)
		return err
	}
	return tc, stop, nil
}
