package client

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// SandboxOptions configure CreateSandbox. Zero fields take the profile's
// or the server's defaults.
type SandboxOptions struct {
	// Runtime of execs that name none; "" = shell.
	Runtime string
	// Limits bound the whole sandbox (Memory, CPUs, Pids, Workspace) and
	// are its execs' defaults (Timeout, Output, CPUTime; OpenFiles is
	// every exec's).
	Limits Limits
	// TTL is the lifetime from creation, whole seconds; 0 = the
	// profile's or the server's default (300 s).
	TTL time.Duration
	// IdleTimeout ends the sandbox after that long without activity,
	// whole seconds; 0 = the profile's (never, by default).
	IdleTimeout time.Duration
	// Labels, for ListSandboxes.
	Labels map[string]string
	// Profile is a sandbox profile of the server; "" = "default".
	Profile string
}

// Sandbox is a session sandbox: one kept alive across execs and file
// operations until Delete or its expiry. It holds only its id; any
// number of Sandbox values may name the same sandbox.
type Sandbox struct {
	c  *Client
	id string
}

// CreateSandbox starts a session sandbox and returns once it is ready.
// Delete it when done (it also expires after its TTL).
func (c *Client) CreateSandbox(ctx context.Context, opts SandboxOptions) (*Sandbox, error) {
	rt, err := parseRuntime(opts.Runtime, "runtime")
	if err != nil {
		return nil, err
	}
	req := &execfarmv1.CreateSandboxRequest{Runtime: rt, Limits: opts.Limits.proto(), Labels: opts.Labels, Profile: opts.Profile}
	if opts.TTL != 0 {
		s := int64(opts.TTL / time.Second)
		req.ShutdownAfterSeconds = &s
	}
	if opts.IdleTimeout != 0 {
		s := int64(opts.IdleTimeout / time.Second)
		req.IdleTimeoutSeconds = &s
	}
	sb, err := c.sess.CreateSandbox(ctx, req)
	if err != nil {
		return nil, c.wrap(err)
	}
	return &Sandbox{c: c, id: sb.GetSandboxId()}, nil
}

// Sandbox names an existing session sandbox (by the id CreateSandbox
// gave, here or in another process). It calls nothing: a sandbox that
// does not exist shows in the first call, as a *NotFoundError.
func (c *Client) Sandbox(id string) *Sandbox { return &Sandbox{c: c, id: id} }

// ListSandboxes lists the caller's sandboxes carrying all of labels
// (nil: all of them), oldest first.
func (c *Client) ListSandboxes(ctx context.Context, labels map[string]string) ([]*execfarmv1.Sandbox, error) {
	resp, err := c.sess.ListSandboxes(ctx, &execfarmv1.ListSandboxesRequest{Labels: labels})
	return resp.GetSandboxes(), c.wrap(err)
}

// ID is the sandbox's id.
func (s *Sandbox) ID() string { return s.id }

// Status reports the sandbox's status. A sandbox that does not exist (or
// is another principal's) is state SANDBOX_STATE_NOT_FOUND, not an error.
func (s *Sandbox) Status(ctx context.Context) (*execfarmv1.Sandbox, error) {
	sb, err := s.c.sess.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: s.id})
	return sb, s.c.wrap(err)
}

// Delete kills everything in the sandbox and destroys it; it returns the
// number of execs that were running and ended cancelled.
func (s *Sandbox) Delete(ctx context.Context) (cancelledExecs int, err error) {
	resp, err := s.c.sess.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: s.id})
	return int(resp.GetCancelledExecs()), s.c.wrap(err)
}

// ExecOptions configure Exec.
type ExecOptions struct {
	// Runtime: "" = the sandbox's (a shell command line for a shell
	// sandbox).
	Runtime string
	// Cwd is the working directory, absolute or relative to /workspace;
	// "" = /workspace.
	Cwd string
	// Env is the exec's environment, beside a minimal PATH and HOME.
	Env map[string]string
	// Stdin is given on standard input, then EOF.
	Stdin []byte
	// Timeout, Output and CPUTime override the sandbox's exec defaults
	// (0 = the sandbox's).
	Timeout time.Duration
	Output  int64
	CPUTime time.Duration
	// OnStdout and OnStderr receive the output as written, byte for byte.
	OnStdout, OnStderr Output
	// MaxCollect is RunOptions.MaxCollect.
	MaxCollect int64
}

// Exec runs command in the sandbox (a shell command line, or a program
// of the runtime) and returns once it has ended, streaming its output to
// opts' callbacks meanwhile. Cancelling ctx cancels the exec.
func (s *Sandbox) Exec(ctx context.Context, command string, opts ExecOptions) (*Result, error) {
	rt, err := parseRuntime(opts.Runtime, "runtime")
	if err != nil {
		return nil, err
	}
	req := &execfarmv1.ExecRequest{SandboxId: s.id, Code: command, Runtime: rt, Stdin: opts.Stdin, Env: opts.Env, Workdir: opts.Cwd}
	if opts.Timeout != 0 {
		ms := opts.Timeout.Milliseconds()
		req.TimeoutMs = &ms
	}
	if opts.Output != 0 {
		req.MaxOutputBytes = &opts.Output
	}
	if opts.CPUTime != 0 {
		ms := opts.CPUTime.Milliseconds()
		req.CpuTimeMs = &ms
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := s.c.sess.Exec(ctx, req)
	if err != nil {
		return nil, s.c.wrap(err)
	}
	out, errOut := newCollector(opts.OnStdout, opts.MaxCollect), newCollector(opts.OnStderr, opts.MaxCollect)
	var id string
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errorf("the exec stream ended without a result")
		}
		if err != nil {
			return nil, s.c.wrap(err)
		}
		if id == "" {
			id = chunk.GetExecutionId()
		}
		switch ch := chunk.GetChunk().(type) {
		case *execfarmv1.ExecChunk_Stdout:
			out.add(ch.Stdout)
		case *execfarmv1.ExecChunk_Stderr:
			errOut.add(ch.Stderr)
		case *execfarmv1.ExecChunk_Result:
			return resultOf(id, ch.Result, out, errOut), nil
		}
	}
}

// Cancel cancels a running execution (a single-use run or an exec) by
// its id.
func (c *Client) Cancel(ctx context.Context, executionID string) (state string, err error) {
	resp, err := c.exec.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: executionID})
	return resp.GetState().Name(), c.wrap(err)
}
