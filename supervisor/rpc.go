package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/internal/utf8text"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/transform"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// Execute runs the request and answers when it has ended. A caller that
// goes away cancels the execution. output is ProDisco's for goja and node
// (proDiscoView), stdout otherwise; error_output is always stderr.
func (s *Server) Execute(ctx context.Context, req *sandboxv1.ExecuteRequest) (*sandboxv1.ExecuteResponse, error) {
	req = s.proDiscoRequest(req)
	e, err := s.submit(ctx, req)
	if err != nil {
		if msg, ok := s.proDiscoRefusal(req, err); ok {
			return &sandboxv1.ExecuteResponse{Success: false, Error: &msg, State: sandboxv1.ExecutionState_EXECUTION_STATE_FAILED}, nil
		}
		return nil, rpcError(err)
	}
	res, err := e.Wait(ctx)
	if err != nil {
		_, _ = e.Cancel()
		return nil, rpcError(err)
	}
	h, room, err := readHeads(ctx, e, proDiscoView(e, req.GetRawOutput()))
	if err != nil {
		return nil, rpcError(err)
	}
	resp := &sandboxv1.ExecuteResponse{
		Cached:             cachedToProto(res),
		Success:            res.Success,
		Output:             h.out,
		Error:              errorText(res),
		ExecutionTimeMs:    res.Usage.WallMs,
		State:              stateToProto(res.State),
		ErrorOutput:        h.errOut,
		Outcome:            outcomeToProto(e.ID(), res),
		OutputPartial:      h.outMore,
		ErrorOutputPartial: h.errMore,
	}
	room.Settle(int64(proto.Size(resp)))
	return resp, nil
}

// ExecuteStream streams output chunks as they are written, then the result
// as the last chunk. Closing the call before the end cancels the
// execution. The chunks are ProDisco's console lines for goja and node
// (proDiscoView), else the raw output with offsets.
func (s *Server) ExecuteStream(req *sandboxv1.ExecuteRequest, stream sandboxv1.SandboxService_ExecuteStreamServer) error {
	ctx := stream.Context()
	req = s.proDiscoRequest(req)
	e, err := s.submit(ctx, req)
	if err != nil {
		if msg, ok := s.proDiscoRefusal(req, err); ok {
			return proDiscoStreamRefusal(stream, msg)
		}
		return rpcError(err)
	}
	if proDiscoView(e, req.GetRawOutput()) {
		return streamLines(e, stream)
	}
	return streamOutput(ctx, e, stream)
}

// streamOutput is ExecuteStream of the raw output: a chunk per event of
// e's subscription with its stream offset, each made text by package
// utf8text's rule, then the result. It cancels e when the stream fails.
func streamOutput(ctx context.Context, e *registry.Execution, stream sandboxv1.SandboxService_ExecuteStreamServer) error {
	// Per stream, the text rule carried across chunks: a run of invalid
	// bytes that a chunk boundary cuts is one U+FFFD, as in Execute's
	// output (the registry cuts events on character boundaries, so no
	// character straddles two chunks).
	var dec [2]utf8text.Decoder
	for ev, err := range e.Subscribe(ctx) {
		if err != nil {
			_, _ = e.Cancel()
			return rpcError(err)
		}
		chunk := &sandboxv1.ExecuteChunk{ExecutionId: e.ID(), TimestampMs: time.Now().UnixMilli()}
		if ev.Result != nil {
			chunk.Chunk = &sandboxv1.ExecuteChunk_Result{Result: resultToProto(e.ID(), *ev.Result)}
			return stream.Send(chunk)
		}
		chunk.StreamOffset = ev.Offset
		d := &dec[ev.Stream]
		if ev.Gap {
			d.Flush() // dropped bytes lie between: a run after them is another
		}
		text := d.Decode(ev.Data) + d.Cut()
		if text == "" {
			continue // the event only went on a run of invalid bytes
		}
		// Events are at most registry.MaxEventBytes (their text at most
		// twice that); what is handed to gRPC and not yet read by the
		// client stays bounded.
		if err := transport.ReserveSend(ctx, int64(len(text))); err != nil {
			_, _ = e.Cancel()
			return rpcError(err)
		}
		if ev.Stream == registry.Stdout {
			chunk.Chunk = &sandboxv1.ExecuteChunk_Output{Output: text}
		} else {
			chunk.Chunk = &sandboxv1.ExecuteChunk_ErrorOutput{ErrorOutput: text}
		}
		if err := stream.Send(chunk); err != nil {
			_, _ = e.Cancel()
			return err
		}
	}
	return rpcError(errors.New("output subscription ended without a result"))
}

// ExecuteAsync starts the execution and answers at once with its id.
func (s *Server) ExecuteAsync(ctx context.Context, req *sandboxv1.ExecuteRequest) (*sandboxv1.ExecuteAsyncResponse, error) {
	req = s.proDiscoRequest(req)
	e, err := s.submit(ctx, req)
	if err != nil {
		return nil, rpcError(s.proDiscoAsyncRefusal(req, err))
	}
	return &sandboxv1.ExecuteAsyncResponse{
		ExecutionId:   e.ID(),
		State:         stateToProto(e.State()),
		QueuePosition: int32(s.runner.QueuePosition(e.ID())),
	}, nil
}

// GetExecution returns state and output from the given per-stream byte
// offsets. With wait it long-polls until the execution ends, bounded by
// the call's deadline or, without one, by Config.MaxLongPoll.
func (s *Server) GetExecution(ctx context.Context, req *sandboxv1.GetExecutionRequest) (*sandboxv1.GetExecutionResponse, error) {
	e, err := s.lookup(ctx, req.GetExecutionId())
	if err != nil {
		return nil, rpcError(err)
	}
	switch {
	case req.GetOutputOffset() < 0:
		return nil, rpcError(badRequest("output_offset", "output offsets must not be negative"))
	case req.GetErrorOutputOffset() < 0:
		return nil, rpcError(badRequest("error_output_offset", "output offsets must not be negative"))
	}
	if req.GetWait() {
		wctx := ctx
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, s.cfg.MaxLongPoll)
			defer cancel()
		}
		_, _ = e.Wait(wctx)
	}
	// Room for the largest response before any of it is built: the
	// pages being built and those waiting to be written are bounded
	// together (transport.Reserve), however many calls come at once.
	outMax, errMax := pageBytes(e, registry.Stdout, req.GetOutputOffset()), pageBytes(e, registry.Stderr, req.GetErrorOutputOffset())
	room, err := transport.Reserve(ctx, textBytes(outMax)+textBytes(errMax)+responseSlack)
	if err != nil {
		return nil, rpcError(err)
	}
	resp, err := s.executionPage(e, req, outMax, errMax)
	if err != nil {
		room.Release()
		return nil, rpcError(err)
	}
	room.Settle(int64(proto.Size(resp)))
	return resp, nil
}

// pageBytes is the most bytes of stream a page from offset holds: what
// was written past offset when asked, at least a character's worth, at
// most MaxOutputBytesPerCall. A page is read to this size, so that the
// room taken for it before it is read bounds it (bytes written
// meanwhile go to the next page).
func pageBytes(e *registry.Execution, stream registry.Stream, offset int64) int64 {
	return min(MaxOutputBytesPerCall, max(e.Output(stream).WrittenBytes-offset, utf8.UTFMax))
}

// textBytes bounds the text of a page of n bytes (pageText): a run of
// invalid bytes, one U+FFFD of 3 bytes, comes after a valid character
// (at least a byte), except at the start of its head and of its tail.
func textBytes(n int64) int64 { return 2*n + 6 }

// responseSlack is room for the rest of a response carrying output (its
// result: a larger one is counted when it is built,
// transport.Reservation.Settle).
const responseSlack = 64 << 10

// executionPage builds GetExecution's response of e.
func (s *Server) executionPage(e *registry.Execution, req *sandboxv1.GetExecutionRequest, outMax, errMax int64) (*sandboxv1.GetExecutionResponse, error) {
	// Take the result before the output: once terminal, nothing more is
	// written, so the output read next is complete (but for what was
	// written after pageBytes looked: then the page says More, and the
	// result comes with the page that reaches the end).
	res, terminal := e.Result()
	outPage, err := e.ReadPage(registry.Stdout, req.GetOutputOffset(), outMax)
	if err != nil {
		return nil, err
	}
	errPage, err := e.ReadPage(registry.Stderr, req.GetErrorOutputOffset(), errMax)
	if err != nil {
		return nil, err
	}
	out, outGap := pageText(outPage)
	errOut, errGap := pageText(errPage)
	resp := &sandboxv1.GetExecutionResponse{
		ExecutionId:             e.ID(),
		State:                   stateToProto(e.State()),
		Output:                  out,
		ErrorOutput:             errOut,
		OutputLength:            outPage.Next,
		ErrorOutputLength:       errPage.Next,
		QueuePosition:           int32(s.runner.QueuePosition(e.ID())),
		OutputDroppedBytes:      outPage.Dropped,
		ErrorOutputDroppedBytes: errPage.Dropped,
	}
	if outPage.Dropped > 0 {
		resp.OutputGapIndex = int64(outGap)
	}
	if errPage.Dropped > 0 {
		resp.ErrorOutputGapIndex = int64(errGap)
	}
	switch {
	case terminal && !outPage.More:
		resp.State = stateToProto(res.State)
		resp.Result = resultToProto(e.ID(), res)
	case terminal:
		// A stdout page short of the end of a finished execution: the
		// state and result come with the page that reaches it, so a
		// client that reads stdout until a terminal state (ProDisco's
		// loop) gets every byte. stderr pages on while
		// error_output_length < outcome.stderr_bytes (ProDisco clients
		// read no stderr offset: its first page never holds back the end).
		resp.State = sandboxv1.ExecutionState_EXECUTION_STATE_RUNNING
	}
	return resp, nil
}

// CancelExecution cancels a pending or running execution and waits
// (bounded by the call) until it has ended. Cancelling a terminal
// execution is FAILED_PRECONDITION; one that ends by itself before the
// kill lands answers success false, its final state and the message
// "Execution already finished".
func (s *Server) CancelExecution(ctx context.Context, req *sandboxv1.CancelExecutionRequest) (*sandboxv1.CancelExecutionResponse, error) {
	e, err := s.lookup(ctx, req.GetExecutionId())
	if err != nil {
		return nil, rpcError(err)
	}
	if _, err := e.Cancel(); err != nil {
		if resp, ok := s.proDiscoCancelFinished(e, err); ok {
			return resp, nil
		}
		if errors.Is(err, registry.ErrTerminal) {
			err = describe(err, "execution %s already ended (%s)", e.ID(), e.State())
		}
		return nil, rpcError(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := e.Wait(wctx)
	if err != nil {
		return &sandboxv1.CancelExecutionResponse{Success: true, State: stateToProto(e.State()), Message: ptr("cancellation requested; the execution has not ended yet")}, nil
	}
	if res.State != registry.StateCancelled {
		// The execution ended on its own between the request and the
		// kill: nothing was cancelled. ProDisco's words for it.
		return &sandboxv1.CancelExecutionResponse{State: stateToProto(res.State), Message: ptr(alreadyFinished)}, nil
	}
	return &sandboxv1.CancelExecutionResponse{Success: true, State: stateToProto(res.State)}, nil
}

// alreadyFinished is ProDisco's CancelExecutionResponse.message for an
// execution that ended before it could be cancelled.
const alreadyFinished = "Execution already finished"

// ListExecutions lists executions newest first, filtered by state and
// age, then limited.
func (s *Server) ListExecutions(ctx context.Context, req *sandboxv1.ListExecutionsRequest) (*sandboxv1.ListExecutionsResponse, error) {
	switch {
	case req.GetLimit() < 0:
		return nil, rpcError(badRequest("limit", "limit and include_completed_within_ms must not be negative"))
	case req.GetIncludeCompletedWithinMs() < 0:
		return nil, rpcError(badRequest("include_completed_within_ms", "limit and include_completed_within_ms must not be negative"))
	}
	var states []registry.State
	for _, st := range req.GetStates() {
		rs, ok := stateFromProto(st)
		if !ok {
			return nil, rpcError(badRequest("states", "unknown execution state %d", int32(st)))
		}
		states = append(states, rs)
	}
	infos := s.reg.ListOwned(caller(ctx).String(), states, 0, time.Duration(req.GetIncludeCompletedWithinMs())*time.Millisecond)
	if sb := req.GetSandboxId(); sb != "" {
		infos = slices.DeleteFunc(infos, func(in registry.Info) bool { return in.SandboxID != sb })
	}
	if n := int(req.GetLimit()); n > 0 && len(infos) > n {
		infos = infos[:n]
	}
	resp := &sandboxv1.ListExecutionsResponse{}
	for _, in := range infos {
		resp.Executions = append(resp.Executions, infoToProto(in, s.runner.QueuePosition(in.ID)))
	}
	return resp, nil
}

// HealthCheck reports whether the supervisor serves, its isolation layers
// and its load: executions running and queued, the warm pool, and the
// node's memory budget with the bytes its holders hold now.
func (s *Server) HealthCheck(ctx context.Context, _ *sandboxv1.HealthCheckRequest) (*sandboxv1.HealthCheckResponse, error) {
	closing := s.runner.Closing()
	running, queued := s.sched.Counts()
	held, total := s.budget.Usage()
	kctx := ""
	if s.cfg.Kube != nil {
		kctx = s.cfg.Kube.Context()
	}
	ps, _ := s.runner.PoolStats()
	reason := ""
	switch {
	case closing:
		reason = ReasonShuttingDown
	case sandbox.ForkServerCheck() != nil:
		reason = ReasonForkServer
	}
	return &sandboxv1.HealthCheckResponse{
		WarmPoolSize:      int32(ps.Size),
		WarmPoolReady:     int32(ps.Ready),
		WarmPoolStarting:  int32(ps.Starting),
		WarmPoolInUse:     int32(ps.InUse),
		Healthy:           reason == "",
		UnhealthyReason:   reason,
		KubernetesContext: kctx,
		Layers:            s.cfg.Layers,
		Running:           int32(running),
		Queued:            int32(queued),
		Version:           s.cfg.Version,
		DefaultRuntime:    s.cfg.DefaultRuntime,
		Node:              s.ids.Node(),
		MemoryBudgetBytes: total,
		MemoryHeldBytes:   held,
	}, nil
}

// ExecuteTest runs code followed by tests in test mode (goja, node): the
// tests get `test` and `assert` with uvu's API, bound so that the code
// cannot replace them, and per-test results come back on a channel of
// their own, so no amount of output hides them and the code cannot forge
// them (runtime/testresult). Missing tests is
// INVALID_ARGUMENT; a run that defines no test fails with an error saying
// so. It goes through the queue like every execution; a caller that goes
// away cancels it.
func (s *Server) ExecuteTest(ctx context.Context, req *sandboxv1.ExecuteTestRequest) (*sandboxv1.ExecuteTestResponse, error) {
	if strings.TrimSpace(req.GetTests()) == "" {
		if s.proDiscoStyle() {
			return s.proDiscoTestRefusal(noTestsMessage), nil
		}
		return nil, rpcError(badRequest("tests", "tests is empty"))
	}
	// The code and the tests are transformed apart and assembled in the
	// runtime's harness (program.Build).
	code, tests := req.GetCode(), req.GetTests()
	if code == "" {
		code, tests = tests, ""
	}
	e, err := s.submitTests(ctx, &sandboxv1.ExecuteRequest{
		Source:        &sandboxv1.ExecuteRequest_Code{Code: code},
		TimeoutMs:     req.TimeoutMs,
		Runtime:       req.GetRuntime(),
		Limits:        req.GetLimits(),
		Deterministic: req.GetDeterministic(),
		Seed:          req.GetSeed(),
	}, true, tests)
	if err != nil {
		var syn *transform.SyntaxError
		if s.proDiscoStyle() && errors.As(err, &syn) {
			return s.proDiscoTestRefusal(syn.Error()), nil
		}
		return nil, rpcError(err)
	}
	res, err := e.Wait(ctx)
	if err != nil {
		_, _ = e.Cancel()
		return nil, rpcError(err)
	}
	h, room, err := readHeads(ctx, e, proDiscoView(e, req.GetRawOutput()))
	if err != nil {
		return nil, rpcError(err)
	}
	resp := testResponse(e.ID(), res, h)
	// readHeads reserved room for the output; the tests (up to
	// execution.MaxResultsBytes of results) count past it.
	room.Settle(int64(proto.Size(resp)))
	return resp, nil
}

// ListCache lists the caller's cached scripts newest first, filtered by a
// substring or a glob (`list-*`) matched against names and descriptions
// (in the prodisco error style, ProDisco's filter: a substring of the
// name). With the cache disabled the list is empty.
func (s *Server) ListCache(ctx context.Context, req *sandboxv1.ListCacheRequest) (*sandboxv1.ListCacheResponse, error) {
	resp := &sandboxv1.ListCacheResponse{}
	if s.cfg.Cache == nil {
		return resp, nil
	}
	c, err := s.cfg.Cache.Lookup(cacheOwner(ctx))
	if err != nil {
		return nil, rpcError(err)
	}
	if c == nil {
		return resp, nil // the caller never cached a script
	}
	filter := req.GetFilter()
	if s.proDiscoStyle() {
		filter = "" // ProDisco's filter, below
	}
	entries, err := c.List(filter)
	if err != nil {
		return nil, rpcError(err)
	}
	if s.proDiscoStyle() {
		entries = proDiscoCacheFilter(entries, req.GetFilter())
	}
	for _, e := range entries {
		resp.Entries = append(resp.Entries, cacheEntryToProto(e))
	}
	return resp, nil
}

// ClearCache removes every cached script of the caller and returns how
// many.
func (s *Server) ClearCache(ctx context.Context, _ *sandboxv1.ClearCacheRequest) (*sandboxv1.ClearCacheResponse, error) {
	if s.cfg.Cache == nil {
		return &sandboxv1.ClearCacheResponse{}, nil
	}
	n, err := s.cfg.Cache.Clear(cacheOwner(ctx))
	if err != nil {
		return nil, rpcError(err)
	}
	return &sandboxv1.ClearCacheResponse{DeletedCount: int64(n)}, nil
}

// lookup returns the execution named by a request's execution_id, if
// it belongs to the caller: another principal's execution is not found,
// with the same message as one that does not exist.
func (s *Server) lookup(ctx context.Context, id string) (*registry.Execution, error) {
	if id == "" {
		return nil, badRequest("execution_id", "execution_id is empty")
	}
	e, err := s.reg.Get(id)
	if err == nil && e.Meta().Owner != caller(ctx).String() {
		err = fmt.Errorf("execution %s of another principal: %w", quote.Q(id), registry.ErrNotFound)
	}
	if err != nil {
		return nil, notHeld("execution", id, err)
	}
	return e, err
}

// notHeld describes a lookup miss of an id of kind ("execution",
// "sandbox"), told apart by the id itself (package nodeid): another
// node made it (faultOf: FAILED_PRECONDITION naming the owner), this
// node made it before its supervisor restarted or no supervisor could
// have made it (NOT_FOUND saying so), or it is unknown here: never made,
// or forgotten after the retention time (NOT_FOUND).
func notHeld(kind, id string, err error) error {
	var (
		other   *nodeid.OtherNodeError
		earlier *nodeid.EarlierRunError
	)
	switch {
	case errors.As(err, &other):
		return describe(err, "%s %s belongs to node %q, not to this node %q: send the request to the supervisor on node %q",
			kind, quote.Q(id), other.Owner, other.Node, other.Owner)
	case errors.As(err, &earlier):
		return describe(err, "%s %s not found: the supervisor on node %q made it before it restarted, and nothing survives a restart",
			kind, quote.Q(id), earlier.Node)
	case errors.Is(err, nodeid.ErrMalformed):
		return describe(err, "%s %s not found: not an id this service makes (NODE_RUN_RANDOM)", kind, quote.Q(id))
	}
	if node := nodeOf(id); node != "" {
		return describe(err, "%s %s not found on node %q (never made, or it ended longer than the retention time ago)", kind, quote.Q(id), node)
	}
	return describe(err, "%s %s not found (never made, or it ended longer than the retention time ago)", kind, quote.Q(id)) // a UUID (prodisco style)
}

// nodeOf is the node an id names ("" for a malformed one).
func nodeOf(id string) string {
	p, _ := nodeid.Parse(id)
	return p.Node
}

// MaxOutputBytesPerCall is the most output of one stream that one response
// carries, bytes (proto/PROTOCOL.md): GetExecution pages by offset,
// Execute and ExecuteTest carry the first page of each stream and say
// when there is more (output_partial, error_output_partial). A response
// thus holds at most 2 MiB of output however much an execution keeps
// (64 MiB per stream at the ceiling).
const MaxOutputBytesPerCall = 1 << 20

// heads is the first page of each stream of a finished execution.
type heads struct {
	out, errOut      string
	outMore, errMore bool
}

// readHeads takes room for a response of the heads of e's streams on
// ctx's connection (transport.Reserve, before reading them), then reads
// them; the caller settles the room with the response's size. With
// proDisco the stdout head is of ProDisco's view (the console lines
// joined), cut the same way.
func readHeads(ctx context.Context, e *registry.Execution, proDisco bool) (heads, *transport.Reservation, error) {
	outMax, errMax := pageBytes(e, registry.Stdout, 0), pageBytes(e, registry.Stderr, 0)
	outText := textBytes(outMax)
	if proDisco {
		outText = MaxOutputBytesPerCall // cut from text
	}
	room, err := transport.Reserve(ctx, outText+textBytes(errMax)+responseSlack)
	if err != nil {
		return heads{}, nil, err
	}
	h, err := headsOf(e, proDisco, outMax, errMax)
	if err != nil {
		room.Release()
		return heads{}, nil, err
	}
	return h, room, nil
}

func headsOf(e *registry.Execution, proDisco bool, outMax, errMax int64) (heads, error) {
	var h heads
	if proDisco {
		h.out, h.outMore = textHead(jsconsole.Join(e.Lines()), MaxOutputBytesPerCall)
	} else {
		p, err := e.ReadPage(registry.Stdout, 0, outMax)
		if err != nil {
			return heads{}, err
		}
		h.out, _ = pageText(p)
		h.outMore = p.More
	}
	p, err := e.ReadPage(registry.Stderr, 0, errMax)
	if err != nil {
		return heads{}, err
	}
	h.errOut, _ = pageText(p)
	h.errMore = p.More
	return h, nil
}

// pageText returns a page's kept bytes as valid UTF-8 (utf8text: a run
// of invalid bytes is one U+FFFD), and the index in it where the bytes
// dropped between the page's head and tail lie: head and tail are made
// valid apart, so that no rune is made of bytes from both sides of the
// gap.
func pageText(p registry.Page) (string, int) {
	head := utf8text.Bytes(p.Head)
	return head + utf8text.Bytes(p.Tail), len(head)
}

// textHead returns s cut to at most n bytes on a rune boundary, and
// whether it was cut.
func textHead(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

func ptr[T any](v T) *T { return &v }

// streamLines is ExecuteStream as ProDisco streams: a chunk per console
// line as it is written ("[ERROR] boom\n" as error_output), then the
// result.
func streamLines(e *registry.Execution, stream sandboxv1.SandboxService_ExecuteStreamServer) error {
	for ev, err := range e.SubscribeLines(stream.Context()) {
		if err != nil {
			_, _ = e.Cancel()
			return rpcError(err)
		}
		if ev.Result != nil {
			return stream.Send(&sandboxv1.ExecuteChunk{ExecutionId: e.ID(), TimestampMs: time.Now().UnixMilli(),
				Chunk: &sandboxv1.ExecuteChunk_Result{Result: resultToProto(e.ID(), *ev.Result)}})
		}
		for _, l := range ev.Lines {
			chunk := &sandboxv1.ExecuteChunk{ExecutionId: e.ID(), TimestampMs: time.Now().UnixMilli()}
			if err := transport.ReserveSend(stream.Context(), int64(len(l.Text))+1); err != nil {
				_, _ = e.Cancel()
				return rpcError(err)
			}
			if l.Error {
				chunk.Chunk = &sandboxv1.ExecuteChunk_ErrorOutput{ErrorOutput: l.Text + "\n"}
			} else {
				chunk.Chunk = &sandboxv1.ExecuteChunk_Output{Output: l.Text + "\n"}
			}
			if err := stream.Send(chunk); err != nil {
				_, _ = e.Cancel()
				return err
			}
		}
	}
	return rpcError(errors.New("console subscription ended without a result"))
}

// cacheOwner names the script cache of the call's principal: a client's
// own (its scripts, like its executions and sandboxes, are no one
// else's: not its holder's nor its holder's other clients'), else the
// principal's; and the principal's too for a client that asks for its
// holder's scripts (principal.SharedScriptsHeader: the MCP bridge's
// clients of one stdio process or tokenless session, all the local user).
func cacheOwner(ctx context.Context) cache.Owner {
	p := caller(ctx)
	if principal.SharedScriptsFromIncoming(ctx) {
		return cache.Owner{Principal: p.Unscoped().String()}
	}
	return cache.Owner{Principal: p.Unscoped().String(), Client: p.Client}
}
