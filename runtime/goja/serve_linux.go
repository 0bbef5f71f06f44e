package goja

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/runtime/keep"
)

// ServeEnv names the descriptor of the control socket on which a kept
// runtime process serves programs one after another (package
// runtime/keep), instead of reading one program from ProgramFD.
//
// Every run gets a runtime of its own (Run, RunTests): nothing of a
// program's globals, timers or promises reaches the next, and no
// goroutine of a run outlives it. Between runs fds 1 and 2 are /dev/null;
// during one they are the run's stdout and stderr, so that what the Go
// runtime itself writes on a crash reaches the run's stderr. Before it
// replies, a process that holds more than freeAbove gives the run's heap
// back to the kernel (debug.FreeOSMemory), so that the next run starts
// near its idle size.
const ServeEnv = keep.Env

// serve runs the programs that arrive on the control socket sock until
// it reaches end of file or ctx ends, and returns Main's exit status: 0,
// or 2 when the socket fails.
func serve(ctx context.Context, sock int, tests, console bool, opts Options) int {
	want := 3
	if tests {
		want++
	}
	if console {
		want++
	}
	// Opened once: fds 1 and 2 must never stay on a finished run's pipes.
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-goja: open /dev/null:", err)
		return 2
	}
	for ctx.Err() == nil {
		fds, err := receive(sock)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "execfarm-goja: control socket:", err)
			return 2
		}
		code := ExitUncaught
		var used unix.Rusage
		if len(fds) == want {
			code, used = serveOne(ctx, fds, null, tests, console, opts)
		} else {
			for _, fd := range fds {
				unix.Close(fd)
			}
			code = 2
		}
		reply := keep.Reply{
			ExitCode:     int64(code),
			UserMicros:   unix.TimevalToNsec(used.Utime) / 1000,
			SystemMicros: unix.TimevalToNsec(used.Stime) / 1000,
		}
		if err := unix.Sendmsg(sock, reply.Encode(), nil, nil, 0); err != nil {
			return 2
		}
	}
	return ExitCancelled
}

// freeAbove is how much memory a kept process may hold from the Go
// runtime after a run before it gives the heap back to the kernel at
// once (debug.FreeOSMemory: a forced collection, ~1-4 ms of CPU even for
// a small heap, so not after every run). Below it the runtime's own
// scavenger returns what the heap no longer needs, over time. An idle
// kept process holds ~5 MiB.
const freeAbove = 32 << 20

// retained is the memory the Go runtime holds from the kernel and has not
// released (runtime/metrics: all classes but released heap).
func retained() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return ^uint64(0) // unknown: free
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// redirect makes fds 1 and 2 copies of stdout and stderr. A process that
// cannot ends at once (exit 2): the worker then sees a death, never a run
// whose output went to another run's pipes.
func redirect(stdout, stderr int) {
	if unix.Dup3(stdout, 1, 0) != nil || unix.Dup3(stderr, 2, 0) != nil {
		os.Exit(2)
	}
}

// receive reads one request's descriptors; io.EOF when the worker closed
// the socket.
func receive(sock int) ([]int, error) {
	buf := make([]byte, keep.RequestBytes)
	oob := make([]byte, unix.CmsgSpace(keep.MaxFDs*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 && oobn == 0 {
			return nil, io.EOF
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, err
		}
		var fds []int
		for i := range msgs {
			got, err := unix.ParseUnixRights(&msgs[i])
			if err == nil {
				fds = append(fds, got...)
			}
		}
		return fds, nil
	}
}

// serveOne runs the program of one request (fds: program, stdout, stderr,
// results, console) and returns its exit code and the CPU time it used.
// Every descriptor is closed when it returns.
func serveOne(ctx context.Context, fds []int, null int, tests, console bool, opts Options) (int, unix.Rusage) {
	var before, after unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &before)
	prog := os.NewFile(uintptr(fds[0]), "program")
	var results, con *os.File
	rest := fds[3:]
	if tests {
		results, rest = os.NewFile(uintptr(rest[0]), "results"), rest[1:]
	}
	if console {
		con = os.NewFile(uintptr(rest[0]), "console")
		opts.Console = con
	}
	// The run's stdout and stderr become fds 1 and 2 until it ends.
	redirect(fds[1], fds[2])
	unix.Close(fds[1])
	unix.Close(fds[2])
	code := 2
	program, err := io.ReadAll(prog)
	prog.Close()
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "execfarm-goja: read program:", err)
	case tests:
		code = RunTests(ctx, string(program), os.Stdout, os.Stderr, results, opts)
	default:
		code = Run(ctx, string(program), os.Stdout, os.Stderr, opts)
	}
	for _, f := range []*os.File{results, con} {
		if f != nil {
			f.Close()
		}
	}
	redirect(null, null)
	if retained() > freeAbove {
		debug.FreeOSMemory()
	}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &after)
	return code, unix.Rusage{
		Utime: unix.NsecToTimeval(unix.TimevalToNsec(after.Utime) - unix.TimevalToNsec(before.Utime)),
		Stime: unix.NsecToTimeval(unix.TimevalToNsec(after.Stime) - unix.TimevalToNsec(before.Stime)),
	}
}
