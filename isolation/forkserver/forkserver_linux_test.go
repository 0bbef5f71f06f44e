package forkserver

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/test/hostscan"
)

// serveEnv makes the test binary a fork server (TestMain).
const serveEnv = "FORKSERVER_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		os.Exit(Main())
	}
	leakcheck.Main(m)
}

// start runs this test binary as a fork server; it is closed when the
// test ends.
func start(t *testing.T) *Client {
	t.Helper()
	c, _ := startCmd(t)
	return c
}

// startCmd is start, with the fork server's command.
func startCmd(t *testing.T) (*Client, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{serveEnv + "=1"}
	cmd.Stderr = os.Stderr
	c, err := Start(cmd, func(f func()) { f() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
	})
	return c, cmd
}

func exe(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func devNull(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// TestExitStatusAndZombieUntilRelease: the status is the child's, and the
// pid stays taken (a zombie) until Release, which returns once it is
// reaped.
func TestExitStatusAndZombieUntilRelease(t *testing.T) {
	c := start(t)
	null := devNull(t)
	p, err := c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/sh"), Argv: []string{"sh", "-c", "exit 7"}, Files: []*os.File{null, null, null}})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Wait()
	if err != nil || !ws.Exited() || ws.ExitStatus() != 7 {
		t.Fatalf("Wait = %v (exited %v, status %d), %v; want exit 7", ws, ws.Exited(), ws.ExitStatus(), err)
	}
	if st := procState(p.Pid); st != "Z" {
		t.Fatalf("pid %d after exit, before Release: state %q, want a zombie (Z)", p.Pid, st)
	}
	if err := p.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Release returns once the fork server has reaped the process.
	if st := procState(p.Pid); st != "gone" {
		t.Errorf("pid %d after Release: state %q, want reaped", p.Pid, st)
	}
	if err := p.Release(); err != nil {
		t.Errorf("second Release = %v, want nil", err)
	}
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after Release = %v, want os.ErrProcessDone", err)
	}
}

// output runs s in c, each nil entry of s.Files replaced by the write end
// of one pipe, and returns what the child wrote there and its wait status.
func output(t *testing.T, c *Client, s Spawn) (string, syscall.WaitStatus, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files := make([]*os.File, len(s.Files))
	for i, f := range s.Files {
		files[i] = cmp.Or(f, w)
	}
	s.Files = files
	p, err := c.Spawn(context.Background(), s)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Wait()
	return string(out), ws, err
}

// TestNothingElseIsInherited: a child has exactly its Files, not the
// fork server's socket (fd 3 there) nor anything else the fork server
// holds.
func TestNothingElseIsInherited(t *testing.T) {
	c := start(t)
	null := devNull(t)
	// Builtins only: listing a directory would open a descriptor itself.
	out, _, err := output(t, c, Spawn{
		Exe: exe(t, "/bin/sh"), Argv: []string{"sh", "-c", `for n in 0 1 2 3 4 5 6 7 8 9 10 11 12; do [ -e /proc/$$/fd/$n ] && echo $n; done`},
		Files: []*os.File{null, nil, null},
	})
	if got := strings.Fields(out); strings.Join(got, " ") != "0 1 2" {
		t.Errorf("the child's descriptors are %v, want 0 1 2", got)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestFilesArgvEnvDir: the child gets its descriptors, argv, env and
// working directory.
func TestFilesArgvEnvDir(t *testing.T) {
	c := start(t)
	null := devNull(t)
	out, ws, err := output(t, c, Spawn{
		Exe: exe(t, "/bin/sh"), Argv: []string{"sh", "-c", `echo "$0 $FOO $(pwd)"; echo extra >&3`, "zero"},
		Env: []string{"FOO=bar"}, Dir: "/tmp",
		Files: []*os.File{null, nil, null, nil},
	})
	if want := "zero bar /tmp\nextra\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if err != nil || ws.ExitStatus() != 0 {
		t.Errorf("Wait = %v, %v", ws, err)
	}
}

// TestSignalAndDeathOfServer: Signal reaches the child; when the fork
// server dies its children die too (Pdeathsig) and Wait says so.
func TestSignalAndDeathOfServer(t *testing.T) {
	c := start(t)
	null := devNull(t)
	sleep := func() *Process {
		p, err := c.Spawn(context.Background(), Spawn{
			Exe: exe(t, "/bin/sleep"), Argv: []string{"sleep", "1000"}, Files: []*os.File{null, null, null},
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := sleep()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ws, err := p.Wait(); err != nil || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("Wait = %v, %v; want killed by SIGTERM", ws, err)
	}
	p.Release()
	q := sleep()
	c.Close()
	ws, err := q.Wait()
	if !errors.Is(err, ErrClosed) || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("Wait after the server died = %v, %v; want SIGKILL and ErrClosed", ws, err)
	}
	<-c.Done()
	// The server is reaped (Done); the child was killed with it, and its
	// pid namespace parent (init here) reaps it. Release still closes
	// its pidfd.
	if err := q.Release(); !errors.Is(err, ErrClosed) {
		t.Errorf("Release after the server died = %v, want ErrClosed", err)
	}
	if _, err := c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/true"), Argv: []string{"true"}, Files: []*os.File{null, null, null}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Spawn after the server died = %v, want ErrClosed", err)
	}
}

// TestRefusesWhatItCannotCarry: a SysProcAttr field the protocol does not
// carry is refused, not dropped; a failed exec is an error that keeps
// its errno.
func TestRefusesWhatItCannotCarry(t *testing.T) {
	c := start(t)
	null := devNull(t)
	_, err := c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/true"), Argv: []string{"true"}, Files: []*os.File{null, null, null},
		Sys: &syscall.SysProcAttr{Chroot: "/tmp"}})
	if err == nil || !strings.Contains(err.Error(), "does not carry") {
		t.Errorf("Spawn with Chroot = %v, want refused", err)
	}
	_, err = c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/true"), Argv: []string{"true"}, Files: []*os.File{null, null, null}, Dir: "/nonexistent"})
	// The errno crosses the socket: errors.Is works on the client.
	var se *SpawnError
	if !errors.Is(err, syscall.ENOENT) || !errors.Is(err, os.ErrNotExist) || !errors.As(err, &se) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Spawn in a missing directory = %v, want a SpawnError wrapping ENOENT", err)
	}
	// The server still serves.
	runTrue(t, c, null)
}

// TestSpawnGivesUpWithItsContext: a Spawn whose context ends returns its
// error, and a child the server forked for it all the same is killed and
// reaped, never left running. The cancels race the answers on purpose;
// whichever wins, nothing may survive.
func TestSpawnGivesUpWithItsContext(t *testing.T) {
	c, cmd := startCmd(t)
	null := devNull(t)
	sleep := exe(t, "/bin/sleep")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Spawn(ctx, Spawn{Exe: sleep, Argv: []string{"sleep", "1000"}, Files: []*os.File{null, null, null}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Spawn with a cancelled context = %v, want context.Canceled", err)
	}
	var gaveUp, started int
	for i := range 40 {
		// Cancel after 0 to 3.5 ms: about as long as a spawn takes.
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(i%8)*500*time.Microsecond, cancel)
		p, err := c.Spawn(ctx, Spawn{Exe: sleep, Argv: []string{"sleep", "1000"}, Files: []*os.File{null, null, null}})
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Spawn: %v", err)
			}
			gaveUp++
			continue
		}
		started++
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	t.Logf("%d spawns gave up, %d started", gaveUp, started)
	// A last spawn is answered after every earlier release and orphan
	// kill was sent; the orphans' exits are then only a matter of time.
	runTrue(t, c, null)
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids := children(cmd.Process.Pid)
		if len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children of the fork server left 10 s after every spawn was released or abandoned: %v", kids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists the processes whose parent is pid, zombies included.
func children(pid int) []hostscan.Proc {
	var out []hostscan.Proc
	for _, p := range hostscan.Procs() {
		if p.PPID == pid {
			out = append(out, p)
		}
	}
	return out
}

// TestReleaseOfARunningProcessWaitsForItsExit: a process released while
// it runs is reaped when it exits, and Release returns only then.
func TestReleaseOfARunningProcessWaitsForItsExit(t *testing.T) {
	c := start(t)
	null := devNull(t)
	p, err := c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/sleep"), Argv: []string{"sleep", "60"}, Files: []*os.File{null, null, null}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	released := make(chan error, 1)
	go func() { released <- p.Release() }()
	// Killed through a pidfd of our own (Release closed the Process's).
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if st := procState(pid); st != "gone" {
		t.Errorf("pid %d after Release returned: state %q, want reaped", pid, st)
	}
}

// runTrue runs /bin/true in c and releases it: the server still serves,
// and it has handled every request sent before.
func runTrue(t *testing.T, c *Client, null *os.File) {
	t.Helper()
	p, err := c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/true"), Argv: []string{"true"}, Files: []*os.File{null, null, null}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	p.Release()
}

// TestUserNamespaceOwnedByItsRoot: a child forked into a new user
// namespace gets a namespace owned by the host id its root maps to, not
// by the fork server's root, so that the kernel charges what the child
// counts per user (queued signals, inotify, ...) to that id; the fork
// server's thread keeps its own credentials and capabilities; a new user
// namespace that maps no root is refused.
func TestUserNamespaceOwnedByItsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("forkserver: writing a 65536-id map needs root (euid %d)", os.Geteuid())
	}
	c, cmd := startCmd(t)
	null := devNull(t)
	creds := func() string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"Uid:", "Gid:", "CapEff:", "CapPrm:"} {
				if strings.HasPrefix(l, k) {
					keep = append(keep, l)
				}
			}
		}
		return strings.Join(keep, "; ")
	}
	before := creds()
	host := 0x7000_0000 + (os.Getpid()%256)*65536
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: host, Size: 65536}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := c.Spawn(context.Background(), Spawn{
		Exe: exe(t, "/bin/sh"), Argv: []string{"sh", "-c", "echo started; exec sleep 600"},
		Files: []*os.File{null, w, null},
		Sys: &syscall.SysProcAttr{
			Cloneflags: unix.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids,
			GidMappingsEnableSetgroups: true, Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
		},
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = p.Signal(syscall.SIGKILL)
		_, _ = p.Wait()
		_ = p.Release()
	}()
	line := make([]byte, 8)
	if _, err := io.ReadFull(r, line); err != nil || string(line) != "started\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	ns, err := os.Open("/proc/" + strconv.Itoa(p.Pid) + "/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var owner uint32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, ns.Fd(), unix.NS_GET_OWNER_UID, uintptr(unsafe.Pointer(&owner))); e != 0 {
		t.Fatalf("ioctl NS_GET_OWNER_UID: %v", e)
	}
	if owner != uint32(host) {
		t.Errorf("the child's user namespace is owned by uid %d, want %d (the host id its root maps to)", owner, host)
	}
	if after := creds(); after != before {
		t.Errorf("the fork server's credentials changed:\nbefore %s\nafter  %s", before, after)
	}

	noRoot := []syscall.SysProcIDMap{{ContainerID: 1, HostID: host, Size: 1}}
	_, err = c.Spawn(context.Background(), Spawn{Exe: exe(t, "/bin/true"), Argv: []string{"true"}, Files: []*os.File{null, null, null},
		Sys: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER, UidMappings: noRoot, GidMappings: noRoot}})
	if err == nil || !strings.Contains(err.Error(), "must map uid and gid 0") {
		t.Errorf("Spawn of a user namespace that maps no root = %v, want refused", err)
	}
	runTrue(t, c, null)
}
