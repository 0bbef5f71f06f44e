package transformer

import (
	"bufio"
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
	stackS, memoryS, _ := strings.Cut(bounds, ",")
	stack, err1 := strconv.ParseInt(stackS, 10, 64)
	memory, err2 := strconv.ParseUint(memoryS, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(os.Stderr, "transform helper: bounds %q: %v\n", bounds, err)
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
		status, payload := run(Kind(hdr[4]), string(code))
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
		b, jerr := json.Marshal(se)
		if jerr != nil {
			return statusError, []byte(jerr.Error())
		}
		return statusSyntax, b
	case err != nil:
		return statusError, []byte(err.Error())
	case len(js) > MaxOutput:
		return statusOutput, binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	}
	return statusOK, []byte(js)
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
