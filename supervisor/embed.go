package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
	"github.com/execfarm/execfarm/supervisor/host"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// Embedded starts a private supervisor for one client process (the CLI's
// `run` when no server is configured or reachable): a unix socket in a
// fresh temporary directory, its own cgroup parent, its own uid window
// (host.EmbeddedUIDBase) unless cfg.Sandbox.IDs is set (the host probe then
// checks the default window), executions in the foreground. It refuses
// to start as host.Check does; "seccomp" in allowDegraded sets
// cfg.Sandbox.NoSeccomp. stop shuts it down and removes everything it
// created.
func Embedded(ctx context.Context, cfg Config, allowDegraded []string) (tc transport.Config, stop func() error, err error) {
	return EmbeddedWith(ctx, cfg, EmbeddedOptions{AllowDegraded: allowDegraded})
}

// EmbeddedOptions are an embedded supervisor's choices beyond its Config.
type EmbeddedOptions struct {
	// AllowDegraded is Embedded's allowDegraded.
	AllowDegraded []string
	// Token, when set, is the one bearer token the supervisor accepts
	// (transport.Config.Token, principal "token:default"); the returned
	// transport.Config carries it, so that its Dial sends it. ""
	// accepts every caller that can open the socket.
	Token string
}

// EmbeddedWith is Embedded with opts.
func EmbeddedWith(ctx context.Context, cfg Config, opts EmbeddedOptions) (tc transport.Config, stop func() error, err error) {
	allowDegraded := opts.AllowDegraded
	host.RemoveStaleEmbedded(cfg.Sandbox.Cgroup)
	dir, err := embeddedDir()
	if err != nil {
		return tc, nil, err
	}
	cfg, unlock, err := embeddedConfig(cfg, dir, allowDegraded)
	// serveStop is not the named result stop: the closure returned below
	// calls it, and would call itself were it stop.
	var serveStop func() error
	if err == nil {
		var s *Server
		if s, err = New(cfg); err == nil {
			tc, serveStop, err = serveEmbedded(ctx, s, dir, opts.Token)
		}
		if err != nil {
			unlock()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return tc, nil, err
	}
	return tc, func() error {
		defer unlock()
		return serveStop()
	}, nil
}

// embeddedDir makes an embedded supervisor's directory in
// host.EmbeddedRoot, named after this process's pid. Its sandboxes' state
// lives there too, not in the default state directory that a serve owns
// (and cleans at start), so that a supervisor killed with SIGKILL leaves
// it where host.RemoveStaleEmbedded looks. Workers pass through it: 0711.
func embeddedDir() (string, error) {
	dir, err := os.MkdirTemp(host.EmbeddedRoot, host.EmbeddedPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("supervisor: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("supervisor: %w", err)
	}
	return dir, nil
}

// embeddedConfig completes cfg for an embedded supervisor whose directory
// is dir: its state directory, cgroup parent and uid window (unless cfg
// sets them; a window it chooses is one it could lock, held until unlock),
// the isolation layers the host probe allows, and a node name. It refuses
// as host.Check does; on an error nothing is held.
func embeddedConfig(cfg Config, dir string, allowDegraded []string) (_ Config, unlock func(), err error) {
	unlock = func() {}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	if cfg.Sandbox.StateDir == "" {
		cfg.Sandbox.StateDir = dir
	}
	if cfg.Sandbox.Cgroup.Parent == "" {
		cfg.Sandbox.Cgroup.Parent = "/" + host.EmbeddedPrefix + strconv.Itoa(os.Getpid())
	}
	pc := probe.Config{Cgroup: cfg.Sandbox.Cgroup}
	if cfg.Sandbox.IDs == nil {
		// The first window no other supervisor holds.
		base, release, err := host.LockEmbeddedWindow(os.Getpid(), host.LockDir())
		if err != nil {
			return cfg, unlock, fmt.Errorf("supervisor: embedded uid window: %w", err)
		}
		unlock = release
		pc.UIDBase, pc.UIDSlots = base, probe.DefaultUIDSlots
		cfg.Sandbox.IDs = sandbox.NewIDPool(pc.UIDBase, 0, pc.UIDSlots)
	}
	allowed, err := probe.ParseAllowDegraded(allowDegraded)
	if err != nil {
		return cfg, unlock, fmt.Errorf("supervisor: %w", err)
	}
	if slices.Contains(allowed, probe.Seccomp) {
		cfg.Sandbox.NoSeccomp = true
	}
	if cfg.Layers, err = host.Check(pc, allowed); err != nil {
		return cfg, unlock, err
	}
	if cfg.NodeName == "" {
		// Its ids go to one client only: a host name that cannot name a
		// node (New would refuse it) is no reason not to start.
		if cfg.NodeName, err = nodeid.HostNode(); err != nil {
			cfg.NodeName = "localhost"
		}
	}
	return cfg, unlock, nil
}

// serveEmbedded serves s on a unix socket in dir, in the background, and
// returns once it accepts calls; with token, only to callers that send it.
// stop shuts s down and removes its cgroup parent and dir; on an error the
// caller removes dir.
func serveEmbedded(ctx context.Context, s *Server, dir, token string) (tc transport.Config, stop func() error, err error) {
	tc = transport.Config{SocketPath: filepath.Join(dir, "execfarm.sock"), Token: token}
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
		return tc, nil, err
	}
	cg := s.cfg.Sandbox.Cgroup
	stop = func() error {
		cancel()
		err := <-done
		_, _ = cgroup.Cleanup(cg)
		_ = cgroup.RemoveParent(cg)
		os.RemoveAll(dir)
		return err
	}
	return tc, stop, nil
}
