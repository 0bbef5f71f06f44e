package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/execfarm/execfarm/isolation/oomscore"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/capability"
	"github.com/execfarm/execfarm/isolation/landlock"
	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/isolation/seccomp/install"
	"github.com/execfarm/execfarm/worker/plugin"
)

// serve is the worker proper: it builds the sandbox and serves go-plugin.
func serve() int {
	start := time.Now()
	cfg, err := plugin.DecodeConfig(os.Getenv(plugin.EnvConfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-worker:", err)
		return 2
	}
	os.Unsetenv(plugin.EnvConfig)
	srv := newServer()
	// Opened now: Landlock will not let the worker open it later.
	oom, err := oomscore.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-worker:", err)
		return 2
	}
	srv.oom = oom
	if cfg.ForkUnixNano > 0 {
		// From the fork to here: exec, Go runtime and package init.
		srv.startup.begin(time.Unix(0, cfg.ForkUnixNano))
		srv.startup.mark("exec")
	} else {
		srv.startup.begin(start)
	}
	if cfg.WaitSync {
		// cgroup v1: block until the supervisor has placed us in our
		// cgroup; it closes its end of the pipe when done.
		sync := os.NewFile(plugin.SyncFD, "sync")
		_, _ = io.Copy(io.Discard, sync)
		sync.Close()
		srv.startup.mark("sync")
	}
	// Now in its own cgroup: the forking thread roots a cgroup namespace
	// there (see forker).
	var tasks *os.File
	if cfg.PayloadTasksFD > 0 {
		tasks = os.NewFile(uintptr(cfg.PayloadTasksFD), "payload/tasks")
		srv.bornInPayload = true
	}
	if err := srv.forker.start(tasks, cfg.Session); err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-worker:", err)
		return 2
	}
	if cfg.PayloadProcsFD > 0 {
		srv.payload = os.NewFile(uintptr(cfg.PayloadProcsFD), "payload/cgroup.procs")
	}
	if cfg.Session {
		srv.session = true
		srv.payloadTasks = tasks
		if cfg.ExecCgroupFD > 0 {
			c, err := newExecCgroups(os.NewFile(uintptr(cfg.ExecCgroupFD), "exec-cgroups"))
			if err != nil {
				fmt.Fprintln(os.Stderr, "execfarm-worker:", err)
				return 2
			}
			srv.execCgroups = c
		}
	}
	go srv.reap(notifyChildren())
	logger := hclog.New(&hclog.LoggerOptions{Name: "worker", Output: os.Stderr, Level: hclog.Warn, JSONFormat: true})
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		Plugins:         plugin.Plugins(srv),
		Logger:          logger,
		// go-plugin calls GRPCServer after it has created the unix socket
		// in the host directory and before it announces it: the moment to
		// leave the host's filesystem for good.
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			srv.startup.mark("listen")
			if err := isolate(cfg, &srv.startup); err != nil {
				fmt.Fprintln(os.Stderr, "execfarm-worker: isolate:", err)
				os.Exit(3)
			}
			return grpc.NewServer(opts...)
		},
	})
	return 0
}

// keepCaps are the capabilities the worker keeps after isolate, in its
// permitted and effective sets only (every thread's bounding, inheritable
// and ambient sets end empty): CAP_SETUID and CAP_SETGID to start runtime
// processes as the sandbox user, CAP_KILL to kill them (another uid).
// Runtime processes hold none: the uid change clears permitted and
// effective, and the empty bounding set lets no exec give any back.
const keepCaps capability.Set = 1<<capability.SetUID | 1<<capability.SetGID | 1<<capability.Kill

// sandboxRlimits are set, soft and hard, on the worker during isolation
// and so inherited by every runtime process; a process cannot raise a hard
// limit without CAP_SYS_RESOURCE, which none keeps. Besides no core dumps,
// they bound the per-user kernel counters that a sandbox charges to its
// own identity (its user namespace is owned by its own host uid, see
// isolation/forkserver): what they allow is what one sandbox's uid may
// hold, whatever the host's defaults (which follow the machine's size,
// 96364 queued signals on a 24 GiB host).
var sandboxRlimits = []struct {
	name     string
	resource int
	value    uint64
}{
	{"RLIMIT_CORE", unix.RLIMIT_CORE, 0},
	// Queued signals (real-time signals, sigqueue, POSIX timers): about
	// 80 bytes of kernel memory each, charged to the sandbox's memory
	// cgroup. The count is per uid, so it bounds the whole sandbox.
	{"RLIMIT_SIGPENDING", unix.RLIMIT_SIGPENDING, maxQueuedSignals},
	// POSIX message queue bytes per uid: the kernel's own default
	// (MQ_BYTES_MAX), stated rather than inherited from the host.
	{"RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE, maxMessageQueueBytes},
}

// maxQueuedSignals is RLIMIT_SIGPENDING in a sandbox: the signals its
// programs may have queued at once, all processes together.
const maxQueuedSignals = 4096

// maxMessageQueueBytes is RLIMIT_MSGQUEUE in a sandbox: the bytes of POSIX
// message queues (messages and bookkeeping) its programs may create.
const maxMessageQueueBytes = 819200

// landlockConfig confines the sandbox, once in its root, to writing its
// tmpfs mounts and devices; the rest of the root is read and execute only.
func landlockConfig() landlock.Config {
	return landlock.Config{
		ReadOnly:  []string{"/"},
		ReadWrite: []string{rootfs.WorkspaceDir, "/tmp", "/dev/shm"},
		Devices:   []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/pts"},
	}
}

// closeExecFrom marks every descriptor from first up close-on-exec
// (close_range(2) with CLOSE_RANGE_CLOEXEC, Linux 5.11; else one fcntl per
// entry of /proc/self/fd, as runc's utils.CloseExecFrom). Nothing the
// worker inherited from the supervisor can then reach a runtime process:
// those get exactly the descriptors start passes. Marking rather than
// closing keeps go-plugin's listener and the Go runtime's own descriptors.
func closeExecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL {
		return os.NewSyscallError("close_range", err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("mark descriptors close-on-exec: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		// The directory's own descriptor is gone by now: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return os.NewSyscallError("fcntl F_SETFD", err)
		}
	}
	return nil
}

// isolate applies the in-sandbox isolation, in DESIGN.md's order, and marks
// its phases in ph.
func isolate(cfg plugin.SandboxConfig, ph *phases) error {
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
		// The goja runtime binary is a read-only bind of the host file.
		// (The worker itself runs from the supervisor's sealed memfd copy,
		// but a memfd cannot be bound: mount and open_tree answer EINVAL,
		// it lives on no mount of this namespace.) The bind is no
		// CVE-2019-5736 path: it is read-only, the file is owned by host
		// root (unmapped: nobody inside), and busy while it runs (ETXTBSY).
		GojaBinary:     cfg.GojaBinary,
		Binds:          cfg.Binds,
		WorkspaceBytes: cfg.WorkspaceBytes,
		TmpBytes:       cfg.TmpBytes,
		ShmBytes:       cfg.ShmBytes,
		UID:            namespace.SandboxUID,
		GID:            namespace.SandboxUID,
	}
	if err := rootfs.Setup(rc); err != nil {
		return err
	}
	ph.mark("rootfs")
	if err := namespace.SetHostname("sandbox"); err != nil {
		return err
	}
	if err := namespace.LoopbackUp(); err != nil {
		return err
	}
	ph.mark("namespaces")
	for _, rl := range sandboxRlimits {
		if err := unix.Setrlimit(rl.resource, &unix.Rlimit{Cur: rl.value, Max: rl.value}); err != nil {
			return os.NewSyscallError("setrlimit "+rl.name, err)
		}
	}
	if err := closeExecFrom(3); err != nil {
		return err
	}
	if err := capability.Restrict(keepCaps); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	ph.mark("capabilities")
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl PR_SET_NO_NEW_PRIVS", err)
	}
	// Landlock where the kernel has it; the host probe reports its ABI,
	// and a kernel that has it but refuses the ruleset fails the sandbox.
	if err := landlock.Restrict(landlockConfig()); err != nil && !errors.Is(err, landlock.ErrNotSupported) {
		return err
	}
	ph.mark("landlock")
	if cfg.Seccomp {
		prog, err := install.Decode(cfg.SeccompFilter)
		if err != nil {
			return fmt.Errorf("seccomp filter from the supervisor: %w", err)
		}
		if err := install.Filter(prog); err != nil {
			return fmt.Errorf("load seccomp filter: %w", err)
		}
		ph.mark("seccomp")
	}
	return nil
}
