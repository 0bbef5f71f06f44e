package worker

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/isolation/seccomp"
	"github.com/execfarm/execfarm/worker/plugin"
)

// serve is the worker proper: it builds the sandbox and serves go-plugin.
func serve() int {
	cfg, err := plugin.DecodeConfig(os.Getenv(plugin.EnvConfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-worker:", err)
		return 2
	}
	os.Unsetenv(plugin.EnvConfig)
	if cfg.WaitSync {
		// cgroup v1: block until the supervisor has placed us in our
		// cgroup; it closes its end of the pipe when done.
		sync := os.NewFile(plugin.SyncFD, "sync")
		_, _ = io.Copy(io.Discard, sync)
		sync.Close()
	}
	srv := newServer()
	go srv.reap()
	logger := hclog.New(&hclog.LoggerOptions{Name: "worker", Output: os.Stderr, Level: hclog.Warn, JSONFormat: true})
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		Plugins:         plugin.Plugins(srv),
		Logger:          logger,
		// go-plugin calls GRPCServer after it has created the unix socket
		// in the host directory and before it announces it: the moment to
		// leave the host's filesystem for good.
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			if err := isolate(cfg); err != nil {
				fmt.Fprintln(os.Stderr, "execfarm-worker: isolate:", err)
				os.Exit(3)
			}
			return grpc.NewServer(opts...)
		},
	})
	return 0
}

// isolate applies the in-sandbox isolation, in DESIGN.md's order.
func isolate(cfg plugin.SandboxConfig) error {
	rc := rootfs.Config{
		Root:          cfg.Root,
		ReadOnly:      []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"},
		ReadOnlyFiles: []string{"/etc/ld.so.cache", "/etc/localtime"},
		Files: map[string]string{
			"/etc/passwd":        "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"/etc/group":         "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
			"/etc/hosts":         "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n",
			"/etc/hostname":      "sandbox\n",
			"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
			"/etc/resolv.conf":   "",
		},
		WorkerBinary:   cfg.WorkerBinary,
		WorkspaceBytes: cfg.WorkspaceBytes,
		TmpBytes:       cfg.TmpBytes,
		ShmBytes:       cfg.ShmBytes,
		UID:            namespace.SandboxUID,
		GID:            namespace.SandboxUID,
	}
	if err := rootfs.Setup(rc); err != nil {
		return err
	}
	if err := namespace.SetHostname("sandbox"); err != nil {
		return err
	}
	if err := namespace.LoopbackUp(); err != nil {
		return err
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return os.NewSyscallError("setrlimit RLIMIT_CORE", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl PR_SET_NO_NEW_PRIVS", err)
	}
	if cfg.Seccomp {
		if err := seccomp.Load(); err != nil {
			return fmt.Errorf("load seccomp filter: %w", err)
		}
	}
	return nil
}
