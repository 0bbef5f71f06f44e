package client

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Runtimes, as Options name them; "" is the server's default (single-use
// runs) or the sandbox's (execs).
const (
	Goja   = "goja"
	Node   = "node"
	Shell  = "shell"
	Python = "python"
)

// DefaultMaxCollect is the most of each output stream a Result holds by
// default, bytes: the server's ceiling of an execution's output limit
// (64 MiB), which the server's own limit keeps a stream within anyway.
const DefaultMaxCollect = 64 << 20

// Limits bound an execution or a sandbox. Zero fields take the server's
// defaults; the server refuses values over its ceilings
// (*InvalidArgumentError naming the field).
type Limits struct {
	// Memory is the sandbox's memory limit, bytes (256 << 20 for 256Mi).
	Memory int64
	// Timeout is the wall-clock timeout, whole milliseconds.
	Timeout time.Duration
	// CPUs is the CPU bandwidth in cores (0.5 = half a core).
	CPUs float64
	// Pids bounds the processes and threads.
	Pids int32
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles int32
	// Output is the output kept per stream, bytes (the head and the tail
	// of a longer stream).
	Output int64
	// CPUTime bounds user+system CPU time.
	CPUTime time.Duration
	// Workspace is the size of the writable workspace, bytes.
	Workspace int64
}

func (l Limits) proto() *sandboxv1.ResourceLimits {
	if l == (Limits{}) {
		return nil
	}
	return &sandboxv1.ResourceLimits{
		MaxMemoryBytes: l.Memory, MaxCpuPercent: int32(l.CPUs*100 + 0.5), MaxFileDescriptors: l.OpenFiles,
		MaxProcesses: l.Pids, MaxOutputBytes: l.Output, TimeoutMs: l.Timeout.Milliseconds(),
		CpuTimeMs: l.CPUTime.Milliseconds(), WorkspaceBytes: l.Workspace,
	}
}

// Output receives an output stream's chunks as the program writes them,
// on the goroutine that made the call, before the call returns. The chunk
// is the callback's only for the call.
type Output func(chunk []byte)

// RunOptions configure Run.
type RunOptions struct {
	// Runtime: Goja, Node, Shell, Python; "" = the server's default.
	Runtime string
	Limits  Limits
	// Env is the program's environment, beside a minimal PATH and HOME.
	Env map[string]string
	// Stdin is given to the program on standard input (nil: /dev/null).
	Stdin []byte
	// OnStdout and OnStderr receive the output as it is written. Run's
	// output is text: a run of bytes that is not UTF-8 arrives as one
	// U+FFFD (an Exec's output is the bytes as written).
	OnStdout, OnStderr Output
	// MaxCollect bounds each stream in the Result, bytes: 0 =
	// DefaultMaxCollect, negative = nothing collected (the callbacks
	// alone see the output). Past it the Result's stream ends and its
	// Truncated flag is set; the callbacks still see everything.
	MaxCollect int64
}

// Result is how an execution ended.
type Result struct {
	ExecutionID string
	// Stdout and Stderr are the output the server kept (and at most
	// MaxCollect bytes of it each).
	Stdout, Stderr []byte
	// StdoutTruncated and StderrTruncated say bytes are missing from
	// Stdout (Stderr): the server's output limit dropped some, or
	// MaxCollect.
	StdoutTruncated, StderrTruncated bool
	// Success is the server's: the program exited 0.
	Success bool
	// ExitCode is the program's exit status when TerminationReason is
	// "exited".
	ExitCode int
	// Signal is the signal that ended the program, 0 for none.
	Signal int
	// State: "completed", "failed", "cancelled", "timeout".
	State string
	// TerminationReason: "exited", "timeout", "cpu_time", "memory",
	// "pids", "output_limit", "cancelled", "signal", "internal".
	TerminationReason string
	// Error is the server's description of a failure ("" for none).
	Error string
	// Usage is the sandbox's resource usage.
	Usage *sandboxv1.ResourceUsage
	// Outcome is the whole of the server's answer (limits in force,
	// queue wait, sandbox id...).
	Outcome *sandboxv1.ExecutionOutcome
}

// collector gathers one stream of a Result within its bound and feeds
// its callback.
type collector struct {
	on   Output
	buf  []byte
	max  int64 // < 0: collect nothing
	full bool  // bytes were left out
}

func newCollector(on Output, max int64) *collector {
	if max == 0 {
		max = DefaultMaxCollect
	}
	return &collector{on: on, max: max}
}

func (c *collector) add(p []byte) {
	if len(p) == 0 {
		return
	}
	if c.on != nil {
		c.on(p)
	}
	if c.max < 0 {
		c.full = true
		return
	}
	room := c.max - int64(len(c.buf))
	if int64(len(p)) > room {
		p, c.full = p[:room], true
	}
	c.buf = append(c.buf, p...)
}

func resultOf(id string, r *sandboxv1.ExecuteResult, out, errOut *collector) *Result {
	o := r.GetOutcome()
	if id == "" {
		id = o.GetExecutionId()
	}
	res := &Result{
		ExecutionID: id, Stdout: out.buf, Stderr: errOut.buf,
		StdoutTruncated: o.GetStdoutTruncated() || out.full, StderrTruncated: o.GetStderrTruncated() || errOut.full,
		Success: r.GetSuccess(), ExitCode: int(o.GetExitCode()), Signal: int(o.GetSignal()),
		State: r.GetState().Name(), TerminationReason: o.GetTerminationReason().Name(),
		Error: r.GetError(), Usage: o.GetUsage(), Outcome: o,
	}
	if res.Stdout == nil {
		res.Stdout = []byte{}
	}
	if res.Stderr == nil {
		res.Stderr = []byte{}
	}
	return res
}

// parseRuntime names the runtime or refuses it, naming field.
func parseRuntime(name, field string) (sandboxv1.Runtime, error) {
	r, ok := sandboxv1.ParseRuntime(name)
	if !ok {
		return 0, invalidArgument(field, "unknown runtime %q (goja, node, shell, python)", name)
	}
	return r, nil
}

// Run runs code in a fresh sandbox and returns once it has ended, the
// output streaming to opts' callbacks meanwhile (ExecuteStream). A
// program that fails (a non-zero exit, a timeout) is a Result, not an
// error; an error is the server's refusal or the call's failure, as one
// of the package's error types. Cancelling ctx cancels the execution
// (the server kills its sandbox) and returns a *CanceledError (or
// *DeadlineExceededError).
func (c *Client) Run(ctx context.Context, code string, opts RunOptions) (*Result, error) {
	rt, err := parseRuntime(opts.Runtime, "runtime")
	if err != nil {
		return nil, err
	}
	req := &sandboxv1.ExecuteRequest{
		Source:  &sandboxv1.ExecuteRequest_Code{Code: code},
		Runtime: rt, Limits: opts.Limits.proto(), Env: opts.Env, Stdin: opts.Stdin,
		// The program's bytes as written, for every runtime.
		RawOutput: true,
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the call, and with it an execution still running
	st, err := c.exec.ExecuteStream(ctx, req)
	if err != nil {
		return nil, c.wrap(err)
	}
	out, errOut := newCollector(opts.OnStdout, opts.MaxCollect), newCollector(opts.OnStderr, opts.MaxCollect)
	var id string
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errorf("the stream ended without a result")
		}
		if err != nil {
			return nil, c.wrap(err)
		}
		if id == "" {
			id = chunk.GetExecutionId()
		}
		switch ch := chunk.GetChunk().(type) {
		case *sandboxv1.ExecuteChunk_Output:
			out.add([]byte(ch.Output))
		case *sandboxv1.ExecuteChunk_ErrorOutput:
			errOut.add([]byte(ch.ErrorOutput))
		case *sandboxv1.ExecuteChunk_Result:
			return resultOf(id, ch.Result, out, errOut), nil
		}
	}
}
