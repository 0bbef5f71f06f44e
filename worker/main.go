package worker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	gojart "github.com/execfarm/execfarm/runtime/goja"
)

// GojaCommand is argv[1] with which the worker binary runs as the goja
// runtime process instead of as the worker; the program arrives on fd 3.
const GojaCommand = "goja"

// GojaTestCommand runs the program in goja's test mode: results as JSON
// lines on fd 4 (runtime/testresult), apart from the program's output.
const GojaTestCommand = "goja-test"

// Main is the worker binary's entry point; it returns the process exit
// status. With argv[1] == GojaCommand it is the goja runtime process;
// otherwise it is the sandbox's worker (see package doc).
func Main() int {
	if len(os.Args) > 1 && (os.Args[1] == GojaCommand || os.Args[1] == GojaTestCommand) {
		return runGoja(os.Args[1] == GojaTestCommand)
	}
	return serve()
}

// runGoja runs the program read from fd 3 in goja (test mode: results on
// fd 4). It runs as the sandbox user, under the seccomp filter inherited
// from the worker.
func runGoja(tests bool) int {
	f := os.NewFile(3, "program")
	if f == nil {
		fmt.Fprintln(os.Stderr, "execfarm: no program on fd 3")
		return 2
	}
	program, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "execfarm: read program:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opts := gojart.Options{Deterministic: os.Getenv("EXECFARM_DETERMINISTIC") == "1"}
	if tests {
		results := os.NewFile(4, "results")
		if results == nil {
			fmt.Fprintln(os.Stderr, "execfarm: no results channel on fd 4")
			return 2
		}
		defer results.Close()
		return gojart.RunTests(ctx, string(program), os.Stdout, os.Stderr, results, opts)
	}
	return gojart.Run(ctx, string(program), os.Stdout, os.Stderr, opts)
}
