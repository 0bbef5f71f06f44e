package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/forkserver"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// queuedExecutions is how many executions wait in the queue while the
// supervisor's RSS is read.
const queuedExecutions = 1000

// proc is one process of the host as read from /proc/PID/stat and status.
type proc struct {
	pid, ppid int
	comm      string
	argv0     string // first word of the command line
	cmdline   string // NUL separators replaced by spaces
	state     string // R, S, D, Z...
	rss       int64  // VmRSS, bytes; 0 for kernel threads and zombies
}

func readProc(pid int) (proc, error) {
	p := proc{pid: pid}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	// comm is in parentheses and may hold spaces: split after the last ')'.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return p, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	p.comm = string(stat[open+1 : end])
	f := strings.Fields(string(stat[end+1:]))
	if len(f) < 2 {
		return p, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	p.state = f[0]
	p.ppid, _ = strconv.Atoi(f[1])
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		p.argv0, _, _ = strings.Cut(string(cmdline), "\x00")
		p.cmdline = strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			p.rss = kb << 10
		}
	}
	return p, nil
}

// descendants returns the live descendants of root (not root itself).
func descendants(root int) []proc {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(pid); err == nil {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []proc
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			out = append(out, c)
			walk(c.pid)
		}
	}
	walk(root)
	return out
}

func rssOf(b *testing.B, pid int) int64 {
	b.Helper()
	p, err := readProc(pid)
	if err != nil {
		b.Fatalf("read RSS of %d: %v", pid, err)
	}
	return p.rss
}

// serve runs `execfarm serve` from dir as a separate process with flags,
// on its own socket, state directory, cgroup parent and uid window, until
// the benchmark ends.
func serve(b *testing.B, dir string, flags ...string) (*exec.Cmd, sandboxv1.SandboxServiceClient) {
	b.Helper()
	// Short: sandbox plugin sockets live below it, and a unix socket path
	// has at most 107 bytes.
	state, err := os.MkdirTemp("", "efb-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(state) })
	if err := os.Chmod(state, 0o755); err != nil {
		b.Fatal(err)
	}
	// Above the integration, hostile and load suites' uid windows.
	uidBase := uint64(3<<30+3<<28) + uint64(os.Getpid()%64)*16*65536
	cg := cgroup.Config{Parent: fmt.Sprintf("/execfarm-bench-%d", os.Getpid())}
	sock := filepath.Join(state, "execfarm.sock")
	var log bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, "execfarm"), append([]string{"serve", "--socket", sock, "--state-dir", state,
		"--cgroup-parent", cg.Parent, "--uid-base", strconv.FormatUint(uidBase, 10), "--grace", "1s",
		"--scripts-cache-dir", filepath.Join(state, "scripts"), "--max-sandboxes", "1"}, flags...)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			b.Errorf("execfarm serve ignored SIGTERM for 30 s")
		}
		_, _ = cgroup.Cleanup(cg)
		for _, p := range cgroup.Probe(cg).Parents {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				b.Errorf("remove cgroup parent: %v", err)
			}
		}
	})
	conn, err := transport.Config{SocketPath: sock}.Dial()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	client := sandboxv1.NewSandboxServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		b.Fatalf("execfarm serve never answered: %v\n%s", err, log.String())
	}
	return cmd, client
}

// waitStarted polls until execution id has written "started" to stdout.
func waitStarted(b *testing.B, client sandboxv1.SandboxServiceClient, id string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
		if err != nil {
			b.Fatalf("GetExecution: %v", err)
		}
		if strings.Contains(r.GetOutput(), "started") {
			return
		}
		if r.GetResult() != nil {
			b.Fatalf("execution ended before it started: %v", r)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			b.Fatal("execution never started")
		}
	}
}

// sandboxRSS sums the RSS of the processes of every sandbox of the
// supervisor root: the descendants of its fork server (workers, prepared
// goja processes, programs), not the fork server itself, which serves
// them all. It counts the workers among them and returns the fork
// server's pid.
func sandboxRSS(b *testing.B, root int) (rss int64, workers, forkServer int) {
	b.Helper()
	for _, p := range descendants(root) {
		if p.ppid == root && strings.Contains(p.cmdline, forkserver.Arg) {
			forkServer = p.pid
		}
	}
	if forkServer == 0 {
		b.Fatalf("no fork server among the children of the supervisor (pid %d)", root)
	}
	for _, p := range descendants(forkServer) {
		rss += p.rss
		if filepath.Base(p.argv0) == "execfarm-worker" {
			workers++
		}
	}
	return rss, workers, forkServer
}

// BenchmarkMemory measures, with `execfarm serve` as a separate process
// and one slot: the supervisor's RSS idle (after one execution) and its
// fork server's (mostly the worker binary's text, shared with every
// worker, since both run the same sealed copy); the RSS of the processes
// of one sandbox (with no warm pool, a running
// one; with a pool, the idle pool divided by its size); and the
// supervisor's RSS with 1000 executions queued. Baselines from the same
// run: bwrap holding a sleeping program (bwrap processes and the program)
// and a bare sleeping program.
func BenchmarkMemory(b *testing.B) {
	dir := binaries(b)
	for _, pool := range poolSizes {
		b.Run(fmt.Sprintf("pool=%d", pool), func(b *testing.B) {
			flags := []string{"--max-concurrent", "1", "--queue-size", strconv.Itoa(queuedExecutions + 10)}
			if pool > 0 {
				flags = append(flags, "--warm-pool", strconv.Itoa(pool))
			}
			cmd, client := serve(b, dir, flags...)
			pid := cmd.Process.Pid
			ctx := context.Background()
			for range b.N {
				if r, err := client.Execute(ctx, codeReq(sandboxv1.Runtime_RUNTIME_SHELL, "true")); err != nil || !r.GetSuccess() {
					b.Fatalf("first execution: %v %v", r, err)
				}
				idle := rssOf(b, pid)

				var perSandbox int64
				var workers, fs int
				if pool > 0 {
					rss, n, f := sandboxRSS(b, pid)
					perSandbox, workers, fs = rss/int64(pool), n, f
				}
				blocker, err := client.ExecuteAsync(ctx, codeReq(sandboxv1.Runtime_RUNTIME_SHELL, "echo started; sleep 600"))
				if err != nil {
					b.Fatal(err)
				}
				waitStarted(b, client, blocker.GetExecutionId())
				if pool == 0 {
					perSandbox, workers, fs = sandboxRSS(b, pid)
				}
				forkServerRSS := rssOf(b, fs)
				running := rssOf(b, pid)

				var ids []string
				for range queuedExecutions {
					r, err := client.ExecuteAsync(ctx, codeReq(sandboxv1.Runtime_RUNTIME_SHELL, "sleep 600"))
					if err != nil {
						b.Fatalf("queue: %v", err)
					}
					ids = append(ids, r.GetExecutionId())
				}
				queued := rssOf(b, pid)
				for _, id := range append(ids, blocker.GetExecutionId()) {
					if _, err := client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id}); err != nil {
						b.Fatalf("cancel: %v", err)
					}
				}

				bwrapTree, bwrapProcs := baselineRSS(b, append(append([]string{}, bwrapArgv[:len(bwrapArgv)-1]...), "/usr/bin/sleep", "600"))
				sleepRSS, _ := baselineRSS(b, []string{"/usr/bin/sleep", "600"})

				fmt.Printf("\nmemory, warm pool %d, 1 slot\n%-52s %12s %10s %10s\n", pool, "series", "RSS", "vs bwrap", "vs sleep")
				row := func(name string, v int64) {
					fmt.Printf("%-52s %12s %10s %10s\n", name, mib(v), ratio(float64(v), float64(bwrapTree)), ratio(float64(v), float64(sleepRSS)))
				}
				row(fmt.Sprintf("bwrap + sleep (%d processes)", bwrapProcs), bwrapTree)
				row("bare sleep", sleepRSS)
				row("supervisor idle", idle)
				row("fork server (one per supervisor)", forkServerRSS)
				row("supervisor, one execution running", running)
				row(fmt.Sprintf("one sandbox, all its processes (%d workers seen)", workers), perSandbox)
				row(fmt.Sprintf("supervisor, %d executions queued", queuedExecutions), queued)
				fmt.Printf("%-52s %12s\n", "per queued execution", fmt.Sprintf("%.1f KiB", float64(queued-running)/queuedExecutions/1024))
				b.ReportMetric(float64(idle)/(1<<20), "idle-MiB")
				b.ReportMetric(float64(forkServerRSS)/(1<<20), "forkserver-MiB")
				b.ReportMetric(float64(perSandbox)/(1<<20), "sandbox-MiB")
				b.ReportMetric(float64(queued)/(1<<20), "queued1000-MiB")
			}
		})
	}
}

// baselineRSS starts argv (a sleeping program), waits until the process
// that runs /usr/bin/sleep exists, sums the RSS of argv's process and its
// descendants, and kills it.
func baselineRSS(b *testing.B, argv []string) (rss int64, procs int) {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		self, err := readProc(cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		all := append(descendants(cmd.Process.Pid), self)
		for _, p := range all {
			// The program is up once the process named sleep sleeps:
			// exec is over and its pages are mapped.
			if p.comm == "sleep" && p.state == "S" {
				for _, q := range all {
					rss += q.rss
				}
				return rss, len(all)
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%v never reached sleep", argv)
		}
		<-tick.C
	}
}

func mib(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
