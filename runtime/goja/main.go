package goja

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/runtime/deterministic"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/testresult"
)

// ProgramFD carries the program to Main: JavaScript, read to EOF.
const ProgramFD = 3

// ConsoleEnv names the descriptor of the console channel
// (jsconsole.FD), set by the supervisor's request when the worker passes
// one; without it the run has no channel.
const ConsoleEnv = jsconsole.EnvFD

// ReadyEnv names the descriptor that Main closes once it waits for its
// program (after the warm-up of a prepared process); the worker sets it
// when it passes one and waits for the close in Prepare
// (workerv1.RunRequest.signals_ready).
const ReadyEnv = "EXECFARM_READY_FD"

// warmupProgram is what Main runs, output discarded, in a runtime process
// that was started ahead of its program (a warm sandbox's prepared
// process): it touches the code paths of a first run (compile, console,
// timers, promises) so that the user's run does not pay their page faults.
const warmupProgram = `console.log("warm", 1, {a: [1]}); await new Promise(r => setTimeout(r, 0)); queueMicrotask(() => {});`

// Main is the goja runtime process (cmd/execfarm-goja): unless it is a
// kept process, which serves programs one after another (ServeEnv), it
// reads the program from ProgramFD, runs it with os.Stdout and os.Stderr (args
// [testresult.GojaArg]: RunTests, results on testresult.FD) and returns the exit
// status: the program's, or 2 when the program cannot be read. SIGTERM and
// SIGINT end the run. When the program is not there yet (the process was
// prepared ahead), it first runs warmupProgram in a throwaway runtime: no
// state of it reaches the program's runtime.
func Main(args []string) int {
	tests := len(args) == 1 && args[0] == testresult.GojaArg
	if len(args) > 0 && !tests {
		fmt.Fprintf(os.Stderr, "execfarm-goja: unknown arguments %q (want none or %s)\n", args, testresult.GojaArg)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opts := Options{Deterministic: os.Getenv(deterministic.Env) == "1"}
	if opts.Deterministic {
		seed, err := strconv.ParseInt(os.Getenv(deterministic.SeedEnv), 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "execfarm-goja: %s: %v\n", deterministic.SeedEnv, err)
			return 2
		}
		opts.Seed = seed
	}
	os.Unsetenv(deterministic.Env)
	os.Unsetenv(deterministic.SeedEnv)
	if fd, err := strconv.Atoi(os.Getenv(ServeEnv)); err == nil && fd > 2 {
		// A kept process: each run brings its own descriptors.
		console := os.Getenv(ConsoleEnv) != ""
		os.Unsetenv(ServeEnv)
		os.Unsetenv(ConsoleEnv)
		Run(ctx, warmupProgram, io.Discard, io.Discard, Options{})
		signalReady()
		return serve(ctx, fd, tests, console, opts)
	}
	// Not opened as a File before this point: a kept process's fd 3 is its
	// socket, which the File's finalizer would close.
	f := os.NewFile(ProgramFD, "program")
	if f == nil {
		fmt.Fprintln(os.Stderr, "execfarm-goja: no program on fd 3")
		return 2
	}
	if fd, err := strconv.Atoi(os.Getenv(ConsoleEnv)); err == nil && fd > 2 {
		con := os.NewFile(uintptr(fd), "console")
		defer con.Close()
		opts.Console = con
	}
	os.Unsetenv(ConsoleEnv)
	if !readable(ProgramFD) {
		Run(ctx, warmupProgram, io.Discard, io.Discard, Options{})
	}
	signalReady()
	program, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm-goja: read program:", err)
		return 2
	}
	if tests {
		results := os.NewFile(testresult.FD, "results")
		if results == nil {
			fmt.Fprintln(os.Stderr, "execfarm-goja: no results channel on fd 4")
			return 2
		}
		defer results.Close()
		return RunTests(ctx, string(program), os.Stdout, os.Stderr, results, opts)
	}
	return Run(ctx, string(program), os.Stdout, os.Stderr, opts)
}

// signalReady closes the descriptor named by ReadyEnv, if any.
func signalReady() {
	if fd, err := strconv.Atoi(os.Getenv(ReadyEnv)); err == nil && fd > 2 {
		_ = unix.Close(fd)
	}
	os.Unsetenv(ReadyEnv)
}

// readable reports whether fd has data (or EOF) to read right now.
func readable(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}
