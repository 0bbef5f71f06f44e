package goja

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/execfarm/execfarm/internal/procstatus"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/keep"
)

// straysOf is what each test's kept process wrote on its own stdout and
// stderr (nothing, between runs).
var straysOf = map[*testing.T]*syncBuffer{}

func strays(t *testing.T) string {
	if b := straysOf[t]; b != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.buf.String()
	}
	return ""
}

// servedRun is what one request to a kept process gave.
type servedRun struct {
	code                    int64
	stdout, stderr, console string
}

// serveRequest sends program to the kept process on sock with fresh
// pipes for stdout, stderr and the console channel (nfds: how many of
// program, stdout, stderr, console to send), and reads them to end of
// file and the reply.
func serveRequest(t *testing.T, sock int, program string, nfds int) servedRun {
	t.Helper()
	var readEnds, writeEnds []*os.File
	for range 4 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		readEnds, writeEnds = append(readEnds, r), append(writeEnds, w)
	}
	// The program pipe is read by the process: send its read end.
	send := []int{int(readEnds[0].Fd()), int(writeEnds[1].Fd()), int(writeEnds[2].Fd()), int(writeEnds[3].Fd())}[:nfds]
	if err := unix.Sendmsg(sock, make([]byte, keep.RequestBytes), unix.UnixRights(send...), nil, 0); err != nil {
		t.Fatal(err)
	}
	readEnds[0].Close()
	for _, w := range writeEnds[1:] {
		w.Close()
	}
	go func() {
		_, _ = io.WriteString(writeEnds[0], program)
		writeEnds[0].Close()
	}()
	outs := make([]string, 3)
	var wg sync.WaitGroup
	for i, r := range readEnds[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := io.ReadAll(r)
			r.Close()
			outs[i] = string(b)
		}()
	}
	wg.Wait()
	buf := make([]byte, keep.ReplyBytes+1)
	n, err := unix.Read(sock, buf)
	reply, derr := keep.DecodeReply(buf[:max(n, 0)])
	if err != nil || derr != nil {
		t.Fatalf("reply: %d bytes, %v (the process wrote %q; the run %q)", n, err, strays(t), outs)
	}
	return servedRun{code: reply.ExitCode, stdout: outs[0], stderr: outs[1], console: outs[2]}
}

// TestKeptProcessServesRunsApart: a kept process runs each program in a
// runtime of its own (no global, timer or exit of one reaches the next),
// reports each exit code, survives a malformed request and ends at end of
// file on its socket.
func TestKeptProcessServesRunsApart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, child := fds[0], os.NewFile(uintptr(fds[1]), "control")
	defer func() {
		if sock >= 0 {
			unix.Close(sock)
		}
	}()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveHelperEnv+"=1", ServeEnv+"=3", ConsoleEnv+"=6")
	cmd.ExtraFiles = []*os.File{child}
	stray := newSyncBuffer()
	cmd.Stdout, cmd.Stderr = stray, stray
	straysOf[t] = stray
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer cmd.Process.Kill()

	first := serveRequest(t, sock, `globalThis.leak = 1; setTimeout(() => console.log("late"), 20); console.log("one"); process.exit(3)`, 4)
	if first.code != 3 || first.stdout != "one\n" {
		t.Errorf("first run: code %d, stdout %q; want 3, %q", first.code, first.stdout, "one\n")
	}
	if !strings.Contains(first.console, "one") {
		t.Errorf("first run: console channel %q lacks its line", first.console)
	}
	second := serveRequest(t, sock, `console.log(typeof leak, typeof process.exitCode); await new Promise(r => setTimeout(r, 60)); console.error("two")`, 4)
	if second.code != 0 || second.stdout != "undefined undefined\n" || second.stderr != "two\n" {
		t.Errorf("second run: code %d, stdout %q, stderr %q; want 0, %q, %q (nothing of the first)", second.code, second.stdout, second.stderr, "undefined undefined\n", "two\n")
	}
	if bad := serveRequest(t, sock, `console.log("never")`, 3); bad.code != 2 || bad.stdout != "" {
		t.Errorf("request without its console channel: code %d, stdout %q; want 2, nothing run", bad.code, bad.stdout)
	}
	third := serveRequest(t, sock, `throw new Error("three")`, 4)
	if third.code != ExitUncaught || !strings.Contains(third.stderr, "Uncaught Error: three") {
		t.Errorf("third run: code %d, stderr %q; want %d and the error", third.code, third.stderr, ExitUncaught)
	}
	if !strings.Contains(third.console, `"`+string(jsconsole.Thrown)+`"`) && !strings.Contains(third.console, "three") {
		t.Errorf("third run: console channel %q lacks the thrown error", third.console)
	}
	// A run that fills the heap: the process gives it back before it
	// replies (freeAbove), so the next run starts from its idle size.
	big := serveRequest(t, sock, `const a = []; for (let i = 0; i < 4e5; i++) a.push({i, s: "x" + i}); console.log(a.length)`, 4)
	if big.code != 0 || big.stdout != "400000\n" {
		t.Fatalf("big run: code %d, stdout %q, stderr %q", big.code, big.stdout, big.stderr)
	}
	// ~260 MiB if kept; the test binary's own pages are ~30 MiB.
	const most = 64 << 20
	if raceEnabled {
		t.Log("resident size not checked: the race detector's shadow memory stays")
	} else if rss := residentBytes(t, cmd.Process.Pid); rss > most {
		t.Errorf("kept process resident at %d MiB after a big run, want under %d MiB", rss>>20, most>>20)
	} else {
		t.Logf("resident after a big run: %d MiB", rss>>20)
	}
	unix.Close(sock)
	sock = -1
	if err := cmd.Wait(); err != nil {
		t.Errorf("kept process at end of file: %v, want exit 0", err)
	}
	if s := strays(t); s != "" {
		t.Errorf("written outside the runs' pipes: %q", s)
	}
}

// residentBytes reads VmRSS of process pid.
func residentBytes(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := procstatus.Bytes(pid, "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
