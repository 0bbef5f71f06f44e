package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/worker/plugin"
)

// workerRunner is the go-plugin runner that knows the sandbox: it forks the
// worker into the sandbox's namespaces and cgroup (go-plugin's runner
// interface exists for plugins in containers). The plugin socket is
// created by the worker in socketDir, a host directory that the sandbox
// cannot see after pivot_root; the supervisor reaches it at the same host
// path, so addresses need no translation.
type workerRunner struct {
	sb     *Sandbox
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	v1     bool
	syncR  *os.File
	exited chan struct{} // closed once the worker has been waited for
	syncW  *os.File
	cgFD   *os.File
	// wc is the worker's configuration, envAt its entry in cmd.Env:
	// Start stamps the fork time into it.
	wc     plugin.SandboxConfig
	envAt  int
	forked time.Time // when the fork (and v1 placement) was done
}

func newRunner(sb *Sandbox, cfg *Config, cmd *exec.Cmd, socketDir string, wc plugin.SandboxConfig) (*workerRunner, error) {
	hostRoot := int(sb.ids.HostUID(0))
	// go-plugin created socketDir 0700 for us; the worker, unprivileged
	// on the host, must be able to create its socket there.
	if err := os.Chown(socketDir, hostRoot, hostRoot); err != nil {
		return nil, fmt.Errorf("sandbox: chown socket dir: %w", err)
	}
	// Execute the worker from the sealed copy of its binary, never from
	// the host file (CVE-2019-5736, see SealedBinary).
	bin, err := Seal(cfg.WorkerBinary)
	if err != nil {
		return nil, err
	}
	r := &workerRunner{sb: sb, cmd: cmd, exited: make(chan struct{})}
	sb.runner = r
	cmd.Path = bin.ExecPath()
	cmd.Args = []string{"execfarm-worker"}
	cmd.Dir = "/"
	cmd.Stdin = nil
	fd := -1
	if f, err := sb.cg.FD(); err == nil {
		r.cgFD = f
		fd = int(f.Fd())
	} else {
		// cgroup v1: no clone into a cgroup; the worker blocks on a sync
		// pipe until Start has placed it.
		r.v1 = true
		r.syncR, r.syncW, err = os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("sandbox: sync pipe: %w", err)
		}
		cmd.ExtraFiles = []*os.File{r.syncR}
	}
	if sb.payload != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, sb.payload)
		wc.PayloadProcsFD = 3 + len(cmd.ExtraFiles) - 1
	}
	if sb.payloadTasks != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, sb.payloadTasks)
		wc.PayloadTasksFD = 3 + len(cmd.ExtraFiles) - 1
	}
	wc.WaitSync = r.v1
	env, err := wc.Encode()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, env)
	r.wc, r.envAt = wc, len(cmd.Env)-1
	cmd.SysProcAttr = namespace.SysProcAttr(sb.ids, fd)
	var perr error
	if r.stdout, perr = cmd.StdoutPipe(); perr != nil {
		return nil, perr
	}
	if r.stderr, perr = cmd.StderrPipe(); perr != nil {
		return nil, perr
	}
	return r, nil
}

// Start forks the worker and, on cgroup v1, places it in the cgroup before
// releasing it: no untrusted byte runs outside the cgroup.
func (r *workerRunner) Start(_ context.Context) error {
	r.wc.ForkUnixNano = time.Now().UnixNano()
	if env, err := r.wc.Encode(); err == nil {
		r.cmd.Env[r.envAt] = env
	}
	var err error
	theSpawner.run(func() { err = r.cmd.Start() })
	if r.syncR != nil {
		r.syncR.Close()
	}
	if r.cgFD != nil {
		r.cgFD.Close()
	}
	if err != nil {
		if r.syncW != nil {
			r.syncW.Close()
		}
		return fmt.Errorf("sandbox: fork worker: %w", err)
	}
	if r.v1 {
		if err := r.sb.cg.AddProc(r.cmd.Process.Pid); err != nil {
			_ = r.cmd.Process.Kill()
			r.syncW.Close()
			return fmt.Errorf("sandbox: place worker in cgroup: %w", err)
		}
		r.syncW.Close()
	}
	r.forked = time.Now()
	return nil
}

func (r *workerRunner) Diagnose(context.Context) string { return r.sb.stderr.suffix() }
func (r *workerRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *workerRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *workerRunner) Name() string                    { return "execfarm-worker " + r.sb.id }
func (r *workerRunner) ID() string                      { return r.sb.id }

// Wait waits for the worker process to exit.
func (r *workerRunner) Wait(context.Context) error {
	defer close(r.exited)
	return r.cmd.Wait()
}

// killWorker SIGKILLs the worker, the init of the sandbox's pid namespace,
// and waits up to timeout for it to be reaped. The kernel kills every other
// process of the namespace when its init dies, and the init's exit is
// complete only once they are gone (zap_pid_ns_processes), so a reaped
// worker means an empty sandbox: the common case needs no cgroup freeze.
// It reports whether the worker was reaped in time.
func (r *workerRunner) killWorker(timeout time.Duration) bool {
	if r.cmd.Process == nil {
		return false
	}
	_ = r.cmd.Process.Kill()
	select {
	case <-r.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Kill kills the whole sandbox (the worker is its pid 1).
func (r *workerRunner) Kill(context.Context) error {
	if err := r.sb.cg.Kill(); err != nil {
		_ = r.cmd.Process.Kill()
		return err
	}
	return nil
}

// PluginToHost is the identity: the socket's host path is the path the
// worker saw when it created it, before pivot_root.
func (r *workerRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin is the identity (no broker traffic crosses it yet).
func (r *workerRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
