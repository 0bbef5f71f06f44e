package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/execfarm/execfarm/isolation/forkserver"
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
	sb  *Sandbox
	cmd *exec.Cmd // go-plugin's: its Env and ExtraFiles, never started
	bin *SealedBinary
	// proc is the worker, a child of the fork server; its pid stays
	// reserved until release (Sandbox.Close).
	proc   *forkserver.Process
	stdout io.ReadCloser
	stderr io.ReadCloser
	// files are the worker's descriptors 0..n-1: /dev/null, the write ends
	// of stdout and stderr, then cmd.ExtraFiles.
	files []*os.File
	v1    bool
	syncR *os.File
	syncW *os.File
	cgFD  *os.File
	// wc is the worker's configuration, envAt its entry in cmd.Env:
	// Start stamps the fork time into it.
	wc     plugin.SandboxConfig
	envAt  int
	forked time.Time // when the fork (and v1 placement) was done
}

// workerGOMAXPROCS is in every worker's environment. The worker is glue
// (the plugin's gRPC server, output pumps, file calls) that blocks in
// system calls, not a computation, so one P serves it: a second costs
// every sandbox start a thread and its page faults, and a set GOMAXPROCS
// also stops the runtime's periodic re-reading of the cgroup's CPU limit
// (sysmon, Go 1.25+) for the sandbox's life. Measured with
// BenchmarkSandboxStart on the 2-core dev VM, two runs each: 63 and 60 ms
// of host CPU per sandbox against 67 and 70, one thread fewer (7).
// Programs the worker starts do not inherit it (their environment is the
// request's).
const workerGOMAXPROCS = "GOMAXPROCS=1"

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
	r := &workerRunner{sb: sb, cmd: cmd, bin: bin}
	sb.runner = r
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
	if sb.sessWorkerEnd != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, sb.sessWorkerEnd)
		wc.ExecCgroupFD = 3 + len(cmd.ExtraFiles) - 1
	}
	wc.WaitSync = r.v1
	env, err := wc.Encode()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, workerGOMAXPROCS, env)
	r.wc, r.envAt = wc, len(cmd.Env)-1
	cmd.SysProcAttr = namespace.SysProcAttr(sb.ids, fd)
	if err := r.openFiles(); err != nil {
		r.closeFiles()
		return nil, err
	}
	return r, nil
}

// openFiles makes the worker's standard descriptors: stdin /dev/null,
// stdout and stderr pipes (go-plugin reads the handshake from stdout).
func (r *workerRunner) openFiles() error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	r.files = []*os.File{null}
	for _, rd := range []*io.ReadCloser{&r.stdout, &r.stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("sandbox: worker pipe: %w", err)
		}
		*rd = pr
		r.files = append(r.files, pw)
	}
	return nil
}

// closeFiles closes the supervisor's copies of the worker's descriptors
// 0..2 (the read ends of its pipes stay with go-plugin).
func (r *workerRunner) closeFiles() {
	for _, f := range r.files {
		f.Close()
	}
	r.files = nil
}

// Start forks the worker and, on cgroup v1, places it in the cgroup before
// releasing it: no untrusted byte runs outside the cgroup.
func (r *workerRunner) Start(ctx context.Context) error {
	r.wc.ForkUnixNano = time.Now().UnixNano()
	if env, err := r.wc.Encode(); err == nil {
		r.cmd.Env[r.envAt] = env
	}
	fs, err := forkServer(r.bin)
	if err == nil {
		r.proc, err = fs.Spawn(ctx, forkserver.Spawn{
			Exe:   r.bin.File(),
			Argv:  []string{"execfarm-worker"},
			Env:   r.cmd.Env,
			Dir:   "/",
			Files: append(r.files, r.cmd.ExtraFiles...),
			Sys:   r.cmd.SysProcAttr,
		})
	}
	r.closeFiles()
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
		// The pid names the worker while the fork server holds it
		// unreaped; a fork server that died meanwhile no longer does.
		if r.proc.Exited() {
			r.syncW.Close()
			_, werr := r.proc.Wait()
			return fmt.Errorf("sandbox: worker gone before its cgroup placement: %v", werr)
		}
		if err := r.sb.cg.AddProc(r.proc.Pid); err != nil {
			_ = r.proc.Signal(syscall.SIGKILL)
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

// Wait waits for the worker process to exit; its error describes an
// exit other than status 0.
func (r *workerRunner) Wait(context.Context) error {
	if r.proc == nil {
		return errors.New("sandbox: worker not started")
	}
	ws, err := r.proc.Wait()
	switch {
	case err != nil:
		return err
	case ws.Signaled():
		return fmt.Errorf("worker killed by %v", ws.Signal())
	case ws.ExitStatus() != 0:
		return fmt.Errorf("worker exited with status %d", ws.ExitStatus())
	}
	return nil
}

// killWorker SIGKILLs the worker, the init of the sandbox's pid namespace,
// and waits up to timeout for it to exit. The kernel kills every other
// process of the namespace when its init dies, and the init's exit is
// complete only once they are gone (zap_pid_ns_processes), so an exited
// worker means an empty sandbox: the common case needs no cgroup freeze.
// It reports whether the worker exited in time.
func (r *workerRunner) killWorker(timeout time.Duration) bool {
	if r.proc == nil {
		return false
	}
	_ = r.proc.Signal(syscall.SIGKILL)
	select {
	case <-r.proc.Done():
		return true
	case <-time.After(timeout):
		return false
	}
}

// release has the fork server reap the worker, waiting until it is (its
// pid, used by the cgroup v1 placement and Reset through /proc/PID, may
// be reused from then on, and no zombie of it outlives Close), and closes
// the read ends of its stdout and stderr, which go-plugin has read to
// EOF: the worker and everything that could hold the write ends are gone.
func (r *workerRunner) release() error {
	var err error
	if r.proc != nil {
		err = r.proc.Release()
	}
	for _, f := range []io.Closer{r.stdout, r.stderr} {
		if f != nil {
			f.Close()
		}
	}
	return err
}

// Kill kills the whole sandbox (the worker is its pid 1).
func (r *workerRunner) Kill(context.Context) error {
	if err := r.sb.cg.Kill(); err != nil {
		if r.proc != nil {
			_ = r.proc.Signal(syscall.SIGKILL)
		}
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
