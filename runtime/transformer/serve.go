package transformer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/runtime/node"
	"github.com/execfarm/execfarm/runtime/transform"
)

// init makes a process started with Env set a helper: it serves
// transforms and exits before main runs.
func init() {
	if v, ok := os.LookupEnv(Env); ok {
		os.Exit(serve(v, os.Stdin, os.Stdout))
	}
}

// serve answers requests on in until it is closed, with the helper's
// bounds (Env's value) set first; it returns the exit code. A request is the code's
// length (4 bytes, little-endian), its Kind (1 byte) and the code; an
// answer is the payload's length, a status and the payload.
func serve(bounds string, in io.Reader, out io.Writer) int {
	f := strings.Split(bounds, ",")
	if len(f) != 4 {
		fmt.Fprintf(os.Stderr, "transform helper: bounds %q: want stack,memory,cpu,timeout\n", bounds)
		return 1
	}
	stack, err1 := strconv.ParseInt(f[0], 10, 64)
	memory, err2 := strconv.ParseUint(f[1], 10, 64)
	cpuMs, err3 := strconv.ParseInt(f[2], 10, 64)
	timeoutMs, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintf(os.Stderr, "transform helper: bounds %q: %v\n", bounds, err)
		return 1
	}
	if err := dropPrivileges(); err != nil {
		fmt.Fprintf(os.Stderr, "transform helper: %v\n", err)
		return 1
	}
	debug.SetMaxStack(int(stack))
	// Collect before the hard limit: a transform's garbage then goes
	// before RLIMIT_DATA ends the helper.
	debug.SetMemoryLimit(int64(memory / 2))
	if raceBuild {
		memory = unix.RLIM_INFINITY
	}
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: memory, Max: memory}); err != nil {
		fmt.Fprintf(os.Stderr, "transform helper: RLIMIT_DATA: %v\n", err)
		return 1
	}
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0 // the supervisor is gone, or closed the pool
			}
			fmt.Fprintf(os.Stderr, "transform helper: read: %v\n", err)
			return 1
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n > MaxInput {
			fmt.Fprintf(os.Stderr, "transform helper: request of %d bytes, over %d\n", n, MaxInput)
			return 1
		}
		code := make([]byte, n)
		if _, err := io.ReadFull(r, code); err != nil {
			fmt.Fprintf(os.Stderr, "transform helper: read: %v\n", err)
			return 1
		}
		big := n > 64<<10
		// The supervisor kills a helper at its wall-clock backstop; one
		// whose supervisor died (SIGKILL, no one to read its answer) ends
		// itself a little later, rather than wait for a CPU for hours. It
		// starts after the supervisor's deadline and lasts longer, so it
		// never fires first.
		watchdog := time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond+watchdogSlack, func() { os.Exit(exitWatchdog) })
		stopCPU := watchCPU(cpuFor(int(n), time.Duration(cpuMs)*time.Millisecond))
		status, payload := run(Kind(hdr[4]), string(code))
		stopCPU()
		watchdog.Stop()
		code = nil
		if big || len(payload) > 1<<20 {
			// A big transform's heap goes back before the answer (an idle
			// helper held 260 MB after lowering 4 MB of code), so that an
			// idle helper is small whatever it transformed last.
			debug.FreeOSMemory()
		}
		binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
		hdr[4] = status
		if _, err := out.Write(hdr[:]); err != nil {
			return 1
		}
		if _, err := out.Write(payload); err != nil {
			return 1
		}
	}
}

// watchdogSlack is how long past the supervisor's wall-clock backstop
// (Timeout) a helper ends itself.
const watchdogSlack = 5 * time.Second

// A helper's exit statuses of its own bounds: exitWatchdog past
// Timeout+watchdogSlack of wall-clock time, exitCPU past its CPU time.
const (
	exitWatchdog = 3
	exitCPU      = 4
)

// cpuPoll is how often a helper reads its CPU time during a transform:
// it ends itself at most cpuPoll (times its running threads) of CPU time
// past its bound, and a transform of a few milliseconds reads it never.
const cpuPoll = 5 * time.Millisecond

// watchCPU ends the process (exitCPU, its last words on standard error)
// once its CPU time grows by limit from now, unless the returned stop is
// called first; stop returns once the watch is over, so that no answer
// follows an exit.
//
// The helper reads its own CPU time, clock_gettime(CLOCK_PROCESS_CPUTIME_ID)
// (user and system time of all its threads, the same account as
// getrusage(RUSAGE_SELF) but to the nanosecond, running slices included),
// every cpuPoll: time it spends waiting for a CPU or stopped does not
// count. Rejected: RLIMIT_CPU counts whole seconds of the process's life,
// not of a request (a reused helper would need it raised per request,
// rounded to seconds), and ends the process by SIGXCPU, whose handling is
// the Go runtime's; a POSIX CPU-time timer (timer_create) signals a
// thread of the runtime's choosing and needs raw syscalls, for a bound
// that a 5 ms poll keeps as well.
func watchCPU(limit time.Duration) (stop func()) {
	start := cpuTime()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		t := time.NewTimer(cpuPoll)
		defer t.Stop()
		for {
			select {
			case <-quit:
				close(done)
				return
			case <-t.C:
			}
			if used := cpuTime() - start; used >= limit {
				fmt.Fprintf(os.Stderr, "transform helper: %v of CPU time, past its bound of %v\n", used, limit)
				os.Exit(exitCPU)
			}
			t.Reset(cpuPoll)
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// cpuTime is the process's CPU time: user and system, all threads.
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0 // not before Linux 2.6.12; the wall-clock backstop remains
	}
	return time.Duration(ts.Nano())
}

// run transforms code and frames the result.
func run(kind Kind, code string) (byte, []byte) {
	var (
		js  string
		err error
	)
	switch kind {
	case Goja:
		js, err = transform.TypeScript(code)
	case Node:
		js, err = node.Transform(code)
	default:
		err = fmt.Errorf("unknown transform %v", kind)
	}
	var se *transform.SyntaxError
	switch {
	case errors.As(err, &se):
		// The offending line can be the whole program (a minified one):
		// what comes back is bounded, around the error's column.
		se.LineText = excerpt(se.LineText, se.Column-1)
		se.Message = excerpt(se.Message, 0)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if jerr := enc.Encode(se); jerr != nil {
			return statusError, []byte(jerr.Error())
		}
		return statusSyntax, b.Bytes()
	case err != nil:
		return statusError, []byte(err.Error())
	case len(js) > MaxOutput:
		return statusOutput, binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	}
	return statusOK, []byte(js)
}

// maxExcerpt bounds the runes of a syntax error's line and message.
const maxExcerpt = 1024

// excerpt returns s cut to maxExcerpt runes around rune at, with "…"
// where it was cut.
func excerpt(s string, at int) string {
	if len(s) <= maxExcerpt {
		return s
	}
	r := []rune(s)
	if len(r) <= maxExcerpt {
		return s
	}
	from := min(max(at-maxExcerpt/2, 0), len(r)-maxExcerpt)
	out := string(r[from : from+maxExcerpt])
	if from > 0 {
		out = "…" + out
	}
	if from+maxExcerpt < len(r) {
		out += "…"
	}
	return out
}

func decodeSyntax(b []byte) (*transform.SyntaxError, error) {
	var se transform.SyntaxError
	if err := json.Unmarshal(b, &se); err != nil {
		return nil, fmt.Errorf("malformed syntax error: %w", err)
	}
	return &se, nil
}

// pidFDs returns this process's pidfds of pid (their fdinfo's Pid line).
func pidFDs(pid int) []int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); l != "anon_inode:[pidfd]" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "Pid:"); ok && strings.TrimSpace(v) == strconv.Itoa(pid) {
				out = append(out, fd)
			}
		}
	}
	return out
}
