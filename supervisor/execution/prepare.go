package execution

import (
	"context"
	"errors"
	"strings"

	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/testresult"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// Input is a request to run, as its caller read it off the wire: the
// runtime by name, the limits already resolved (limits.Resolve).
type Input struct {
	// Runtime is program.Goja, program.Node, program.Shell or
	// program.Python.
	Runtime string
	// Code is the program text; ignored when Cached is set.
	Code string
	// Argv, instead of Code (runtime program.Shell), is a program and
	// its arguments, run without a shell (program.ArgvCommand).
	Argv []string
	// Cached names a cached script to run instead of Code; nil = Code.
	Cached *string
	// Stdin is given to the program on standard input.
	Stdin []byte
	// Env is added to the program's base environment.
	Env map[string]string
	// Tests runs the code in test mode (results on a channel of their
	// own, kept as registry.Result.Attachment).
	Tests bool
	// TestsCode is the tests in test mode, run after Code (program.Input).
	TestsCode string
	// Limits are the execution's limits.
	Limits limits.Set
	// Account is the unscoped principal's key
	// (principal.Principal.Unscoped().String(): the clients of one holder
	// share it) that the request is charged to: its share of the
	// transform helpers (transformer.WithOwner); "" is the local
	// principal.
	Account string
	// Client is the client of Account the request comes from
	// (principal.Principal.Client; "" = Account itself). Account and
	// Client name the script cache (cache.Owner) where Cached names a
	// script and a successful run's new code is saved: a client's
	// scripts are its own, as its executions and sandboxes are.
	Client string
	// Deterministic runs goja and node with a fixed clock and Math.random
	// seeded with Seed (runtime/deterministic); other runtimes ignore it
	// (the gRPC surface refuses it for them before it gets here).
	Deterministic bool
	Seed          int64
}

// Prepare validates in and builds its Job: the code (or the cached script
// it names) turned into the worker's request for the runtime, with the
// runtime process's rlimits; ctx bounds the wait for a transform helper.
// Errors, none of them wrapped further: *CachedError;
// *transform.SyntaxError; *transformer.LimitError; *program.SizeError;
// *program.ArgError, *program.NULError;
// transform.ErrEmptyCode; ctx's error (wrapped);
// program.ErrUnknownRuntime, ErrBadEnv, ErrNoTestMode (wrapped) for a
// request that cannot run anywhere; program.ErrUnavailable (wrapped) for a
// runtime this server lacks.
func (r *Runner) Prepare(ctx context.Context, in Input) (*Job, error) {
	code, cachedName := in.Code, ""
	if in.Cached != nil {
		var err error
		if code, cachedName, err = r.cached(cache.Owner{Principal: in.Account, Client: in.Client}, *in.Cached); err != nil {
			return nil, err
		}
	}
	req, err := program.Build(transformer.WithOwner(ctx, in.Account), program.Input{Runtime: in.Runtime, Code: code, Argv: in.Argv, Stdin: in.Stdin, Env: in.Env, Tests: in.Tests, TestsCode: in.TestsCode, Node: r.cfg.Node,
		Deterministic: in.Deterministic, Seed: in.Seed})
	if err != nil {
		r.logTransformFailure(in, len(code), err)
		return nil, err
	}
	req.Rlimits = in.Limits.Rlimits()
	nonce := ""
	if in.Tests {
		nonce = testresult.PayloadNonce(req.GetProgram())
	}
	if len(in.Argv) > 0 {
		// What the registry and event log show of it (code previews).
		code = ArgvText(in.Argv)
	}
	deterministic := in.Deterministic && (in.Runtime == program.Goja || in.Runtime == program.Node)
	return &Job{Runtime: in.Runtime, Request: req, Limits: in.Limits, ResultsNonce: nonce, Code: code, CachedName: cachedName,
		Deterministic: deterministic, Seed: in.Seed, Account: in.Account, Client: in.Client,
		Cacheable: !in.Tests && cachedName == "" && r.cfg.Cache != nil && (in.Runtime == program.Goja || in.Runtime == program.Node)}, nil
}

// ArgvText renders argv as a shell would read it back: each argument
// single-quoted unless it is made of characters no shell treats
// specially.
func ArgvText(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// cached returns the code of owner's cached script name and its full
// name. Another owner's script is not found, with the error of a name no
// one saved.
func (r *Runner) cached(owner cache.Owner, name string) (code, fullName string, err error) {
	if r.cfg.Cache == nil {
		return "", "", &CachedError{Name: name, Err: errCacheDisabled}
	}
	c, err := r.cfg.Cache.Lookup(owner)
	if err == nil && c == nil {
		err = cache.ErrNotFound // no cache: none of its scripts
	}
	if err != nil {
		return "", "", &CachedError{Name: name, Err: err}
	}
	e, code, err := c.Find(name)
	if err != nil {
		return "", "", &CachedError{Name: name, Err: err}
	}
	return code, e.Name, nil
}

// logTransformFailure logs a transform that passed a helper's bound, or
// whose helper failed, was too busy or was starved of CPU, for the
// operator: such requests come from a client (slow or huge code holds a
// helper), and are not otherwise seen beside the client's own error.
// Other errors (syntax) are the client's alone.
func (r *Runner) logTransformFailure(in Input, codeBytes int, err error) {
	var le *transformer.LimitError
	switch {
	case errors.As(err, &le):
		r.log.Warn("code refused: its transform passed a helper's bound", "account", in.Account, "runtime", in.Runtime,
			"code_bytes", codeBytes, "bound", le.Bound, "error", err)
	case errors.Is(err, transformer.ErrHelper), errors.Is(err, transformer.ErrBusy), errors.Is(err, transformer.ErrStarved):
		r.log.Warn("transform failed", "account", in.Account, "runtime", in.Runtime, "code_bytes", codeBytes, "error", err)
	}
}
