package execution

import (
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// Job is a validated request, ready to run.
type Job struct {
	// Runtime is the runtime's name (program.Goja, program.Node...).
	Runtime string
	// Request is what the worker runs; the Runner sets its proxy broker
	// id when the host proxy is attached.
	Request *workerv1.RunRequest
	// Limits are the execution's resolved limits.
	Limits limits.Set
	// ResultsNonce is the nonce of a test run's program
	// (testresult.EncodePayload): only the results lines that carry it
	// are the harness' (testresult.Authenticate); "" outside test mode.
	ResultsNonce string
	// Code is the source as submitted (for the preview and the cache).
	Code string
	// Account and Client are Input's: whose script cache
	// (cache.Owner) the code came from or goes to, and Account among
	// others whose transform share it used.
	Account, Client string
	// CachedName is the cache entry the code came from, "" for new code.
	CachedName string
	// Cacheable marks new TypeScript/JavaScript code, saved in the cache
	// after a success.
	Cacheable bool
	// Owner is the registry's Meta.Owner: the key of the principal that
	// submitted it (principal.Principal.String).
	Owner string
	// SandboxID is the registry's Meta.SandboxID: the session sandbox the
	// job runs in, "" for a sandbox of its own.
	SandboxID string
	// Observer, if set, is told of the execution's life (a session
	// sandbox's event log); nil = nobody.
	Observer Observer
	// Deterministic marks a goja or node job run with a fixed clock and
	// Math.random seeded with Seed (Input.Deterministic).
	Deterministic bool
	Seed          int64
}

// Observer is told of one execution's life, in this order: Created once,
// Output for every chunk of output as it is written into the registry,
// Finished once with the result. None of them may block: they
// run on the execution's own path.
type Observer interface {
	// Created is called by SubmitIn, on its caller's goroutine, once the
	// execution is registered and can be cancelled, before its run
	// starts.
	Created(e *registry.Execution)
	// Output is called on the run's goroutine with each chunk of output;
	// p is the observer's to keep.
	Output(s registry.Stream, p []byte)
	// Finished is called with the result as published, under the
	// execution's lock, before any reader or waiter can see it
	// (registry.Meta.OnFinish): it may call only e.ID and e.Meta.
	Finished(e *registry.Execution, res registry.Result)
}

// DefaultMaxJobBytes is Config.MaxJobBytes's default: 64 MiB of jobs
// queued or running (sixteen requests at the 4 MiB gRPC message bound,
// thousands of ordinary ones).
const DefaultMaxJobBytes = 64 << 20

// Bytes returns what j holds in memory until its run ends, bytes: the
// worker request (program, stdin, environment, argv) and the source.
func (j *Job) Bytes() int64 {
	return int64(proto.Size(j.Request) + len(j.Code))
}

// Extra is what an execution keeps in registry.Result.Extra. What a
// test-mode program wrote on its results channel (at most
// MaxResultsBytes) is kept as registry.Result.Attachment instead, where
// the registry counts it in its retention budget and may drop it.
type Extra struct {
	// Limits are the limits the execution ran with.
	Limits limits.Set
	// Runtime is the runtime's name.
	Runtime string
	// Cached is the cache entry created by this execution, if any.
	Cached *cache.Entry
	// Deterministic and Seed are the job's: it ran with a fixed clock and
	// Math.random seeded with Seed.
	Deterministic bool
	Seed          int64
}

// MaxResultsBytes bounds a test run's results channel (JSON lines; the
// parser caps the number of results and their strings too).
const MaxResultsBytes = 8 << 20
