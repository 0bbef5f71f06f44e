package supervisor

import (
	"cmp"
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/session"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// sessions serves execfarm.v1.SessionService: the gRPC surface of
// supervisor/session. Every call acts as its caller's principal; every
// error goes through rpcError.
type sessions struct {
	execfarmv1.UnimplementedSessionServiceServer
	s *Server
}

// Bounds of the session service's streams (proto/PROTOCOL.md).
const (
	// maxFileChunk is the largest data message of an upload, and the
	// size of a download's data messages, bytes.
	maxFileChunk = 1 << 20
	// downloadChunk is the size of a download's data messages, bytes.
	downloadChunk = 256 << 10
	// maxListBytes bounds a ListFiles response, bytes: entries past it
	// are left out and the response is truncated. It is the bound of
	// what the supervisor holds of a listing (sandbox.MaxListBytes, of
	// paths and targets alone: an entry encodes to more), and stays
	// under the 4 MiB grpc-go clients accept by default, with room for
	// the message's framing.
	maxListBytes = sandbox.MaxListBytes
)

// sessionRuntime maps the wire enum to a runtime name; unspecified is ""
// (the sandbox's, or the session default).
func (s *Server) sessionRuntime(r sandboxv1.Runtime) (string, error) {
	if r == sandboxv1.Runtime_RUNTIME_UNSPECIFIED {
		return "", nil
	}
	return s.runtimeName(r)
}

func sandboxID(id string) error {
	if id == "" {
		return badRequest("sandbox_id", "sandbox_id is empty")
	}
	return nil
}

// sandboxErr describes a lookup of sandbox id that found nothing of the
// caller's as notHeld does (what the id says: another node's, an earlier
// run's, or not found here); other errors pass as they are.
func sandboxErr(id string, err error) error {
	var (
		other   *nodeid.OtherNodeError
		earlier *nodeid.EarlierRunError
		ended   *session.EndedError
	)
	if errors.As(err, &ended) {
		return describe(err, "%s", ended.Error())
	}
	if errors.Is(err, session.ErrNotFound) || errors.As(err, &other) || errors.As(err, &earlier) {
		return notHeld("sandbox", id, err)
	}
	return err
}

// CreateSandbox starts a sandbox for the caller and answers once it is
// ready.
func (ss sessions) CreateSandbox(ctx context.Context, req *execfarmv1.CreateSandboxRequest) (*execfarmv1.Sandbox, error) {
	s := ss.s
	p, err := s.createParams(req)
	if err != nil {
		return nil, rpcError(err)
	}
	p.Owner = caller(ctx)
	p.ScriptsClient = cacheOwner(ctx).Client
	sb, err := s.sessions.Create(ctx, p)
	if err != nil {
		return nil, rpcError(err)
	}
	return sandboxToProto(sb.Info()), nil
}

// createParams resolves a create over its profile: the request's
// runtime, limits, lifetime and idle timeout where it gives them, the
// profile's elsewhere, the limits within the server's ceilings.
func (s *Server) createParams(req *execfarmv1.CreateSandboxRequest) (session.CreateParams, error) {
	prof, err := s.cfg.Profiles.Get(req.GetProfile())
	if err != nil {
		return session.CreateParams{}, err
	}
	rt, err := s.sessionRuntime(req.GetRuntime())
	if err != nil {
		return session.CreateParams{}, err
	}
	base, err := prof.Resolve(s.cfg.Defaults, s.cfg.Ceilings)
	if err != nil {
		return session.CreateParams{}, err
	}
	l, err := limits.Resolve(req.GetLimits(), nil, base, s.cfg.Ceilings)
	if err != nil {
		return session.CreateParams{}, err
	}
	// A sandbox of a runtime this server lacks could run nothing by
	// default: refuse it as Execute would, before it holds a place.
	if rt := cmp.Or(rt, prof.Runtime); rt != "" {
		if err := program.Available(rt, s.cfg.Node); err != nil {
			return session.CreateParams{}, err
		}
	}
	p := session.CreateParams{Runtime: cmp.Or(rt, prof.Runtime), Limits: l, Labels: req.GetLabels(), Profile: prof.Name,
		Lifetime: prof.ShutdownAfter}
	if req.ShutdownAfterSeconds != nil {
		d, err := s.sessions.LifetimeSeconds(req.GetShutdownAfterSeconds())
		if err != nil {
			return session.CreateParams{}, err
		}
		p.Lifetime = &d
	}
	switch {
	case req.IdleTimeoutSeconds != nil:
		if p.IdleTimeout, err = session.IdleTimeoutSeconds(req.GetIdleTimeoutSeconds()); err != nil {
			return session.CreateParams{}, err
		}
	case prof.IdleTimeout != nil:
		p.IdleTimeout = *prof.IdleTimeout
	}
	return p, nil
}

// GetSandbox reports a sandbox's status; one the caller does not oversee
// (session.Manager.Oversee: its own, and a principal's clients') is
// SANDBOX_STATE_NOT_FOUND, not an error.
func (ss sessions) GetSandbox(ctx context.Context, req *execfarmv1.GetSandboxRequest) (*execfarmv1.Sandbox, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	sb, err := ss.s.sessions.Oversee(caller(ctx), req.GetSandboxId())
	var other *nodeid.OtherNodeError
	switch {
	case err == nil:
		return sandboxToProto(sb.Info()), nil
	case errors.As(err, &other):
		// Not "not found": another node holds it.
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return notFoundSandbox(req.GetSandboxId(), sandboxErr(req.GetSandboxId(), err).Error()), nil
}

// ListSandboxes lists the sandboxes the caller oversees (its own, and a
// principal's clients') carrying the labels.
func (ss sessions) ListSandboxes(ctx context.Context, req *execfarmv1.ListSandboxesRequest) (*execfarmv1.ListSandboxesResponse, error) {
	resp := &execfarmv1.ListSandboxesResponse{}
	for _, sb := range ss.s.sessions.List(caller(ctx), req.GetLabels()) {
		resp.Sandboxes = append(resp.Sandboxes, sandboxToProto(sb.Info()))
	}
	return resp, nil
}

// DeleteSandbox ends a sandbox the caller oversees (its own, or a
// principal's client's) and answers once nothing of it is left.
func (ss sessions) DeleteSandbox(ctx context.Context, req *execfarmv1.DeleteSandboxRequest) (*execfarmv1.DeleteSandboxResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	n, err := ss.s.sessions.Delete(caller(ctx), req.GetSandboxId())
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return &execfarmv1.DeleteSandboxResponse{CancelledExecs: int32(n)}, nil
}

// ExtendSandbox sets the time left before a sandbox the caller oversees
// expires, within the lifetime ceiling, and answers with its status.
func (ss sessions) ExtendSandbox(ctx context.Context, req *execfarmv1.ExtendSandboxRequest) (*execfarmv1.Sandbox, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	sb, err := ss.s.sessions.Extend(caller(ctx), req.GetSandboxId(), req.GetTtlSeconds())
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return sandboxToProto(sb.Info()), nil
}

// exec starts the exec of req for the caller.
func (ss sessions) exec(ctx context.Context, req *execfarmv1.ExecRequest) (*registry.Execution, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, err
	}
	rt, err := ss.s.sessionRuntime(req.GetRuntime())
	if err != nil {
		return nil, err
	}
	p := session.ExecParams{Runtime: rt, Code: req.GetCode(), Argv: req.GetArgv(), Stdin: req.GetStdin(), StdinOpen: req.GetKeepStdinOpen(),
		Env: req.GetEnv(), Workdir: req.GetWorkdir(), TimeoutMs: req.TimeoutMs, OutputBytes: req.MaxOutputBytes, CPUTimeMs: req.CpuTimeMs}
	e, err := ss.s.sessions.Exec(ctx, caller(ctx), req.GetSandboxId(), p)
	return e, sandboxErr(req.GetSandboxId(), describeFull(err))
}

// Exec runs an exec and streams its output, the result last. Closing the
// call before the end cancels the exec.
func (ss sessions) Exec(req *execfarmv1.ExecRequest, stream execfarmv1.SessionService_ExecServer) error {
	ctx := stream.Context()
	e, err := ss.exec(ctx, req)
	if err != nil {
		return rpcError(err)
	}
	if err := stream.Send(&execfarmv1.ExecChunk{ExecutionId: e.ID(), TimestampMs: time.Now().UnixMilli(),
		Chunk: &execfarmv1.ExecChunk_Started{Started: &execfarmv1.ExecStarted{SandboxId: req.GetSandboxId(),
			State: stateToProto(e.State()), QueuePosition: int32(ss.s.runner.QueuePosition(e.ID()))}}}); err != nil {
		_, _ = e.Cancel()
		return err
	}
	for ev, err := range e.Subscribe(ctx) {
		if err != nil {
			_, _ = e.Cancel()
			return rpcError(err)
		}
		chunk := &execfarmv1.ExecChunk{ExecutionId: e.ID(), TimestampMs: time.Now().UnixMilli()}
		switch {
		case ev.Result != nil:
			chunk.Chunk = &execfarmv1.ExecChunk_Result{Result: resultToProto(e.ID(), *ev.Result)}
			return stream.Send(chunk)
		case ev.Stream == registry.Stdout:
			chunk.Chunk, chunk.StreamOffset = &execfarmv1.ExecChunk_Stdout{Stdout: ev.Data}, ev.Offset
		default:
			chunk.Chunk, chunk.StreamOffset = &execfarmv1.ExecChunk_Stderr{Stderr: ev.Data}, ev.Offset
		}
		// Events are at most registry.MaxEventBytes: counted in the
		// response budget until written, as ExecuteStream's.
		if err := transport.ReserveSend(ctx, int64(len(ev.Data))+grpcFrameHeader); err != nil {
			_, _ = e.Cancel()
			return rpcError(err)
		}
		if err := stream.Send(chunk); err != nil {
			_, _ = e.Cancel()
			return err
		}
	}
	return rpcError(errors.New("output subscription ended without a result"))
}

// ExecAsync starts an exec and answers with its id.
func (ss sessions) ExecAsync(ctx context.Context, req *execfarmv1.ExecRequest) (*sandboxv1.ExecuteAsyncResponse, error) {
	e, err := ss.exec(ctx, req)
	if err != nil {
		return nil, rpcError(err)
	}
	return &sandboxv1.ExecuteAsyncResponse{ExecutionId: e.ID(), State: stateToProto(e.State()),
		QueuePosition: int32(ss.s.runner.QueuePosition(e.ID()))}, nil
}

// sessionExec checks that id is the caller's exec of a session sandbox
// that has not ended: the caller's other executions are
// ErrNotSessionExec, ended ones registry.ErrTerminal.
func (ss sessions) sessionExec(ctx context.Context, id string) error {
	e, err := ss.s.lookup(ctx, id)
	switch {
	case err != nil:
		return err
	case e.Meta().SandboxID == "":
		return describe(session.ErrNotSessionExec, "execution %s is not an exec of a session sandbox", quote.Q(id))
	case e.State().Terminal():
		return describe(registry.ErrTerminal, "exec %s already ended (%s)", quote.Q(id), e.State())
	}
	return nil
}

// held maps the session package's "no such held exec" for an exec that
// sessionExec found: it ended in between.
func held(id string, err error) error {
	if errors.Is(err, registry.ErrNotFound) {
		return describe(registry.ErrTerminal, "exec %s already ended", quote.Q(id))
	}
	return err
}

// WriteStdin gives more bytes to an exec's open standard input.
func (ss sessions) WriteStdin(ctx context.Context, req *execfarmv1.WriteStdinRequest) (*execfarmv1.WriteStdinResponse, error) {
	id := req.GetExecutionId()
	if err := ss.sessionExec(ctx, id); err != nil {
		return nil, rpcError(err)
	}
	if err := ss.s.sessions.WriteStdin(ctx, caller(ctx), id, req.GetData(), req.GetClose()); err != nil {
		return nil, rpcError(held(id, err))
	}
	return &execfarmv1.WriteStdinResponse{}, nil
}

// allowedSignals are the signals a caller may send to an exec.
var allowedSignals = map[int32]syscall.Signal{
	1: syscall.SIGHUP, 2: syscall.SIGINT, 3: syscall.SIGQUIT, 9: syscall.SIGKILL, 10: syscall.SIGUSR1,
	12: syscall.SIGUSR2, 15: syscall.SIGTERM, 18: syscall.SIGCONT, 19: syscall.SIGSTOP, 28: syscall.SIGWINCH,
}

// SignalExec sends a signal to a running exec.
func (ss sessions) SignalExec(ctx context.Context, req *execfarmv1.SignalExecRequest) (*execfarmv1.SignalExecResponse, error) {
	sig, ok := allowedSignals[req.GetSignal()]
	if !ok {
		return nil, rpcError(badRequest("signal", "signal %d: want one of 1 (HUP), 2 (INT), 3 (QUIT), 9 (KILL), 10 (USR1), 12 (USR2), 15 (TERM), 18 (CONT), 19 (STOP), 28 (WINCH)", req.GetSignal()))
	}
	id := req.GetExecutionId()
	if err := ss.sessionExec(ctx, id); err != nil {
		return nil, rpcError(err)
	}
	if err := ss.s.sessions.Signal(caller(ctx), id, sig); err != nil {
		return nil, rpcError(held(id, err))
	}
	return &execfarmv1.SignalExecResponse{}, nil
}

// uploadReader reads an upload's data messages as one stream of bytes.
type uploadReader struct {
	stream execfarmv1.SessionService_UploadFileServer
	buf    []byte
}

func (r *uploadReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		msg, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end
		}
		d, ok := msg.GetPart().(*execfarmv1.UploadFileRequest_Data)
		switch {
		case !ok:
			return 0, badRequest("header", "an upload has one header, first")
		case len(d.Data) > maxFileChunk:
			return 0, badRequest("data", "data message of %d bytes; at most %d", len(d.Data), maxFileChunk)
		}
		r.buf = d.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// UploadFile writes a streamed file into a sandbox.
func (ss sessions) UploadFile(stream execfarmv1.SessionService_UploadFileServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = badRequest("header", "an upload starts with its header")
		}
		return rpcError(err)
	}
	h := first.GetHeader()
	if h == nil {
		return rpcError(badRequest("header", "an upload starts with its header"))
	}
	if err := sandboxID(h.GetSandboxId()); err != nil {
		return rpcError(err)
	}
	path, n, err := ss.s.sessions.Upload(ctx, caller(ctx), h.GetSandboxId(), h.GetPath(), h.GetMode(), &uploadReader{stream: stream})
	if err != nil {
		return rpcError(sandboxErr(h.GetSandboxId(), err))
	}
	return stream.SendAndClose(&execfarmv1.UploadFileResponse{Path: path, BytesWritten: n})
}

// DownloadFile streams a file out of a sandbox: its FileInfo, then data.
func (ss sessions) DownloadFile(req *execfarmv1.DownloadFileRequest, stream execfarmv1.SessionService_DownloadFileServer) error {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return rpcError(err)
	}
	ctx := stream.Context()
	err := ss.s.sessions.Download(ctx, caller(ctx), req.GetSandboxId(), req.GetPath(), func(fi session.FileInfo, r io.Reader) error {
		if err := stream.Send(&execfarmv1.DownloadFileResponse{Part: &execfarmv1.DownloadFileResponse_Info{Info: fileInfoToProto(fi)}}); err != nil {
			return err
		}
		for {
			// A buffer per message: gRPC may keep a sent message (stats
			// handlers), so its bytes must not change after Send.
			buf := make([]byte, downloadChunk)
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				if err := stream.Send(&execfarmv1.DownloadFileResponse{Part: &execfarmv1.DownloadFileResponse_Data{Data: buf[:n]}}); err != nil {
					return err
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return rpcError(sandboxErr(req.GetSandboxId(), err))
}

// ListFiles lists a directory of a sandbox.
func (ss sessions) ListFiles(ctx context.Context, req *execfarmv1.ListFilesRequest) (*execfarmv1.ListFilesResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	dir, entries, total, err := ss.s.sessions.ListFiles(ctx, caller(ctx), req.GetSandboxId(), req.GetPath(), int(req.GetMaxEntries()))
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	resp := listResponse(dir, entries, total, maxListBytes)
	// Up to maxListBytes handed to gRPC: counted against the connection's
	// unsent bytes as Execute's and GetExecution's output are.
	if err := transport.ReserveSend(ctx, int64(proto.Size(resp))); err != nil {
		return nil, rpcError(err)
	}
	return resp, nil
}

// listResponse is ListFiles' answer: entries in order while the encoded
// response stays within maxBytes, truncated when it holds fewer than
// total (max_entries or maxBytes cut the listing).
func listResponse(dir string, entries []session.FileInfo, total int64, maxBytes int) *execfarmv1.ListFilesResponse {
	// Sized with truncated set: the most the fixed fields take.
	resp := &execfarmv1.ListFilesResponse{Path: dir, TotalEntries: total, Truncated: true}
	n := proto.Size(resp)
	for _, fi := range entries {
		e := fileInfoToProto(fi)
		m := proto.Size(e)
		// The entry's tag (field 2, one byte) and length prefix.
		m += 1 + protowire.SizeVarint(uint64(m))
		if n+m > maxBytes {
			break
		}
		n += m
		resp.Entries = append(resp.Entries, e)
	}
	resp.Truncated = total > int64(len(resp.Entries))
	return resp
}

// StatFile says whether a path exists in a sandbox and what it is.
func (ss sessions) StatFile(ctx context.Context, req *execfarmv1.StatFileRequest) (*execfarmv1.StatFileResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	fi, ok, err := ss.s.sessions.Stat(ctx, caller(ctx), req.GetSandboxId(), req.GetPath())
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	resp := &execfarmv1.StatFileResponse{Exists: ok}
	if ok {
		resp.Info = fileInfoToProto(fi)
	}
	return resp, nil
}

// RemoveFile removes a path in a sandbox.
func (ss sessions) RemoveFile(ctx context.Context, req *execfarmv1.RemoveFileRequest) (*execfarmv1.RemoveFileResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	if err := ss.s.sessions.Remove(ctx, caller(ctx), req.GetSandboxId(), req.GetPath(), req.GetRecursive()); err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return &execfarmv1.RemoveFileResponse{}, nil
}

// MakeDirectory creates a directory in a sandbox.
func (ss sessions) MakeDirectory(ctx context.Context, req *execfarmv1.MakeDirectoryRequest) (*execfarmv1.MakeDirectoryResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	if err := ss.s.sessions.Mkdir(ctx, caller(ctx), req.GetSandboxId(), req.GetPath(), req.GetMode(), req.GetParents()); err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return &execfarmv1.MakeDirectoryResponse{}, nil
}

// MoveFile moves a path to another in a sandbox.
func (ss sessions) MoveFile(ctx context.Context, req *execfarmv1.MoveFileRequest) (*execfarmv1.MoveFileResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	src, dst, err := ss.s.sessions.Move(ctx, caller(ctx), req.GetSandboxId(), req.GetSource(), req.GetDestination(), req.GetOverwrite())
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	return &execfarmv1.MoveFileResponse{Source: src, Destination: dst}, nil
}

// ReadEvents returns a page of a sandbox's event log.
func (ss sessions) ReadEvents(ctx context.Context, req *execfarmv1.ReadEventsRequest) (*execfarmv1.ReadEventsResponse, error) {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return nil, rpcError(err)
	}
	p, err := ss.s.sessions.ReadEvents(caller(ctx), req.GetSandboxId(), req.GetFromOffset(), int(req.GetMaxEvents()))
	if err != nil {
		return nil, rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	resp := &execfarmv1.ReadEventsResponse{NextOffset: p.Next, FirstOffset: p.First, Ended: p.Ended}
	for _, en := range p.Events {
		resp.Events = append(resp.Events, eventToProto(req.GetSandboxId(), en))
	}
	// The response shares the log's bytes: gRPC encodes it once the
	// room for it is taken.
	if err := transport.ReserveSend(ctx, int64(proto.Size(resp))); err != nil {
		return nil, rpcError(err)
	}
	return resp, nil
}

// SubscribeEvents streams a sandbox's event log from an offset, history
// then live, until the sandbox's last event.
func (ss sessions) SubscribeEvents(req *execfarmv1.SubscribeEventsRequest, stream execfarmv1.SessionService_SubscribeEventsServer) error {
	if err := sandboxID(req.GetSandboxId()); err != nil {
		return rpcError(err)
	}
	ctx := stream.Context()
	seq, err := ss.s.sessions.Subscribe(ctx, caller(ctx), req.GetSandboxId(), req.GetFromOffset())
	if err != nil {
		return rpcError(sandboxErr(req.GetSandboxId(), err))
	}
	comp, share := sendCompressor(ctx)
	for en, err := range seq {
		if err != nil {
			return rpcError(err)
		}
		// The message shares the log's bytes; its encoding (once for
		// every subscriber of the sandbox: wireCache) is made once room
		// for it is taken, and counts until it is written.
		ev := eventToProto(req.GetSandboxId(), en)
		room, err := transport.Reserve(ctx, int64(proto.Size(ev))+grpcFrameHeader)
		if err != nil {
			return rpcError(err)
		}
		var msg any = ev
		if share {
			pm, err := ss.s.wire.get(wireKey{en.Value, comp}, func() (*grpc.PreparedMsg, error) {
				pm := new(grpc.PreparedMsg)
				return pm, pm.Encode(stream, ev)
			})
			if err != nil {
				room.Release()
				return rpcError(err)
			}
			msg = pm
		}
		if err := stream.SendMsg(msg); err != nil {
			room.Release()
			return err
		}
	}
	return nil
}

// grpcFrameHeader is the length-prefixed message's header in gRPC's
// framing, bytes.
const grpcFrameHeader = 5

// sendCompressor returns the name of the compressor that the call of
// ctx sends with ("" for none), and whether it could be told: only then
// may the call share encodings with other calls.
func sendCompressor(ctx context.Context) (string, bool) {
	st, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ SendCompress() string })
	if !ok {
		return "", false
	}
	return st.SendCompress(), true
}
