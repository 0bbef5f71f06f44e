package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Receive bounds of the server (ListenServer with ServerSecurity).
//
// grpc-go has one receive limit for every method, and it holds a
// message whole before any handler or interceptor sees it. The methods
// that carry code, stdin or file data take MaxRequestBytes; every other
// takes MaxSmallRequestBytes, enforced on the connection as the request
// arrives (framedConn): a message that declares more is never held, the
// call ends RESOURCE_EXHAUSTED and the rest of its bytes are dropped as
// they come. Every message, of every method, also takes its declared
// size from the receive budget while it arrives (gRPC holds it whole
// until its last byte): one that does not fit is refused the same way.
const (
	// MaxRequestBytes is the largest request message of the methods in
	// largeRequestMethods (grpc.MaxRecvMsgSize): code of up to 4 MiB less
	// 64 KiB (program.MaxRequestBytes) and the fields around it.
	MaxRequestBytes = 4 << 20
	// MaxSmallRequestBytes is the largest request message of every other
	// method: ids, names, paths, labels and limits.
	MaxSmallRequestBytes = 64 << 10
	// MaxHeaderListBytes bounds a call's header block (grpc-go's
	// MaxHeaderListSize; its default is 16 MiB): a client may send an
	// unfinished block of CONTINUATION frames before any token check (the
	// tap runs once the block ends), and grpc-go's decoder holds what it
	// has decoded until then. A call's metadata (path, token, timeout,
	// execfarm's own headers) takes well under a KiB.
	MaxHeaderListBytes = 16 << 10
	// WindowBytes and ConnWindowBytes are the server's HTTP/2 receive
	// windows, per stream and per connection, fixed (grpc-go would
	// otherwise grow them toward the client, up to 16 MiB each, by BDP
	// estimation): a stream holds at most WindowBytes that its handler
	// has not read.
	WindowBytes     = 64 << 10
	ConnWindowBytes = 128 << 10
	// DefaultReceiveBudget bounds the request bytes being received by
	// the whole server, DefaultReceiveBudgetPerConnection by one
	// connection (Config.ReceiveBudget overrides them): a request
	// message takes its declared size when framedConn reads its length
	// prefix and gives it back once its last byte has gone to gRPC, or
	// its stream or connection ends. A message that does not fit is
	// refused RESOURCE_EXHAUSTED, retryable, and its bytes dropped as
	// they come; the connection's reader never waits for room. A
	// connection's share is MaxStreamsPerConnection messages of 260 KiB
	// (an upload chunk of the CLI and the MCP bridge, 256 KiB of data,
	// with a path of up to 4 KiB), so that a client whose messages are
	// no larger is never refused for its own share, whatever it sends at
	// once.
	DefaultReceiveBudget              = 64 << 20
	DefaultReceiveBudgetPerConnection = MaxStreamsPerConnection * (260 << 10)
	// With a token, a health call of a connection that has not
	// authenticated (it needs no token) takes requests of at most
	// MaxUnauthenticatedRequestBytes (a HealthCheckRequest names a
	// service), and they take their size from a budget of their own,
	// UnauthenticatedReceiveBudget for the server and
	// UnauthenticatedReceiveBudgetPerConnection for one connection,
	// never from the receive budget: callers without the token can then
	// only ever exhaust what callers without the token use, and never
	// refuse a caller with it.
	MaxUnauthenticatedRequestBytes            = 1 << 10
	UnauthenticatedReceiveBudget              = 1 << 20
	UnauthenticatedReceiveBudgetPerConnection = 8 << 10
)

// errorDomain is the google.rpc.ErrorInfo domain of execfarm's errors
// (supervisor.ErrorDomain) and retryDelay the google.rpc.RetryInfo delay
// of a refusal worth retrying (supervisor.RetryDelay).
const (
	errorDomain = "execfarm.dev"
	retryDelay  = time.Second
)

// recvBudget is the server's budget of request bytes being received.
type recvBudget struct {
	max, perConn int64
	used         atomic.Int64
}

// account returns a new connection's share of b.
func (b *recvBudget) account() *recvAccount { return &recvAccount{b: b} }

// recvAccount is what one connection holds of its server's recvBudget.
// Its reader takes; releases come from the reader, from the end of a
// call (its context) and from Close.
type recvAccount struct {
	b      *recvBudget
	mu     sync.Mutex
	held   int64
	closed bool
}

// take reserves n bytes, or reports which bound is full.
func (a *recvAccount) take(n int64) (ok bool, connFull bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.held+n > a.b.perConn {
		return false, true
	}
	for {
		u := a.b.used.Load()
		if u+n > a.b.max {
			return false, false
		}
		if a.b.used.CompareAndSwap(u, u+n) {
			a.held += n
			return true, false
		}
	}
}

// give returns n bytes that take reserved.
func (a *recvAccount) give(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return // close gave back everything
	}
	a.held -= n
	a.b.used.Add(-n)
}

// close gives back everything the connection holds; it takes nothing
// more.
func (a *recvAccount) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.b.used.Add(-a.held)
		a.held = 0
	}
}

// largeRequestMethods are the methods whose requests carry code, stdin or
// file data.
var largeRequestMethods = map[string]bool{
	sandboxv1.SandboxService_Execute_FullMethodName:       true,
	sandboxv1.SandboxService_ExecuteStream_FullMethodName: true,
	sandboxv1.SandboxService_ExecuteAsync_FullMethodName:  true,
	sandboxv1.SandboxService_ExecuteTest_FullMethodName:   true,
	execfarmv1.SessionService_Exec_FullMethodName:         true,
	execfarmv1.SessionService_ExecAsync_FullMethodName:    true,
	execfarmv1.SessionService_WriteStdin_FullMethodName:   true,
	execfarmv1.SessionService_UploadFile_FullMethodName:   true,
}

// requestLimit returns the largest request message method takes.
func requestLimit(method string) int {
	if largeRequestMethods[method] {
		return MaxRequestBytes
	}
	return MaxSmallRequestBytes
}

// callLimit is one call's receive limit and its hold on the receive
// budget; the tap puts it in the call's context and hands it to the
// connection's framedConn, which sets declared when a message of the
// call declares more than limit, busy when the budget has no room for
// it.
type callLimit struct {
	method   string
	limit    uint32
	declared atomic.Uint32 // the size declared past the limit; 0 = none
	// acct is the connection's share of the receive budget (nil: none);
	// held is what the message being received holds of it; done is set
	// once the call's stream has ended (its context).
	acct     *recvAccount
	held     atomic.Int64
	done     atomic.Bool
	busy     atomic.Uint32 // the size the budget had no room for; 0 = none
	connFull atomic.Bool   // busy: the connection's share was full
}

// reserve takes n bytes of the budget for the message starting.
func (l *callLimit) reserve(n uint32) bool {
	if l.acct == nil || n == 0 {
		return true
	}
	ok, connFull := l.acct.take(int64(n))
	if !ok {
		l.connFull.Store(connFull)
		l.busy.Store(n)
		return false
	}
	l.held.Store(int64(n))
	if l.done.Load() {
		l.release() // the stream ended meanwhile
	}
	return true
}

// release gives back what the current message holds.
func (l *callLimit) release() {
	if n := l.held.Swap(0); n > 0 {
		l.acct.give(n)
	}
}

// finish runs when the call's stream ends: nothing more of it is held.
func (l *callLimit) finish() {
	l.done.Store(true)
	l.release()
}

type callLimitKey struct{}

// err returns the call's RESOURCE_EXHAUSTED error when a message of it
// declared more than its limit, else nil.
func (l *callLimit) err() error {
	if l == nil {
		return nil
	}
	if n := l.declared.Load(); n != 0 {
		return status.Errorf(codes.ResourceExhausted, "%s takes request messages of at most %d bytes; this one declares %d",
			l.method[strings.LastIndexByte(l.method, '/')+1:], l.limit, n)
	}
	if n := l.busy.Load(); n != 0 {
		bound, where := l.acct.b.max, "the server"
		if l.connFull.Load() {
			bound, where = l.acct.b.perConn, "one connection"
		}
		st := status.Newf(codes.ResourceExhausted, "the server is receiving too much at once: this request declares %d bytes, more than is left of the %d bytes that requests being received may hold on %s; try again", n, bound, where)
		if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: "RECEIVE_BUDGET", Domain: errorDomain},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(retryDelay)}); err == nil {
			st = d
		}
		return st.Err()
	}
	return nil
}

func callLimitOf(ctx context.Context) *callLimit {
	l, _ := ctx.Value(callLimitKey{}).(*callLimit)
	return l
}

// limitOptions refuse the calls whose message was over its limit (the
// handler then got an empty message, which it never sees).
func limitOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.MaxHeaderListSize(MaxHeaderListBytes),
		grpc.InitialWindowSize(WindowBytes),
		grpc.InitialConnWindowSize(ConnWindowBytes),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := callLimitOf(ctx).err(); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			l := callLimitOf(ss.Context())
			if l == nil {
				return h(srv, ss)
			}
			return h(srv, limitedStream{ss, l})
		}),
	}
}

// limitedStream refuses a message that was over the call's limit.
type limitedStream struct {
	grpc.ServerStream
	l *callLimit
}

func (s limitedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if lerr := s.l.err(); lerr != nil {
		return lerr
	}
	return err
}

// framingCreds wraps a server's transport credentials (insecure ones
// too) so that the connection they hand to gRPC, plaintext HTTP/2, is a
// framedConn, known to the connection the guard tracks.
type framingCreds struct {
	credentials.TransportCredentials
}

func (c framingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return conn, info, err
	}
	tc, ok := raw.(*trackedConn)
	if !ok {
		return conn, info, nil
	}
	f := &framedConn{Conn: conn, prefaceLeft: len(http2Preface), streams: map[uint32]*framedStream{}, acct: tc.g.recv.account(), unauth: tc.g.unauth.account()}
	tc.frames.Store(f)
	return f, info, nil
}

func (c framingCreds) Clone() credentials.TransportCredentials {
	return framingCreds{c.TransportCredentials.Clone()}
}

// HTTP/2 (RFC 9113) as framedConn reads it.
const (
	http2Preface     = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	frameHeaderLen   = 9
	maxFrameLen      = 16384 // SETTINGS_MAX_FRAME_SIZE: gRPC's servers never raise it
	frameData        = 0x0
	frameHeaders     = 0x1
	frameRSTStream   = 0x3
	frameContinue    = 0x9
	flagEndStream    = 0x1
	flagEndHeaders   = 0x4
	flagPadded       = 0x8
	grpcPrefixLen    = 5
	deadStreamID     = 2 // even: a client can never open it, so gRPC drops its DATA
	maxTrackedStream = 512
	readChunk        = 16 << 10
)

// framedConn is a server connection's plaintext, as gRPC reads it, with
// the request limit of each call enforced in its DATA frames.
//
// It hands gRPC whole frames, and stops after each header block: gRPC
// reads the connection from one goroutine and calls the tap (guard.tap)
// for a new call before it reads again, so the next Read learns the
// call's limit (pending) and gives it to the stream of that block. In a
// limited stream it follows the 5-byte prefix of each gRPC message; a
// message that declares more than the limit, or that the receive budget
// has no room for, reaches gRPC as an empty message that ends the
// stream, the call's handler refuses it (its callLimit says why), and
// the rest of the stream's DATA goes to a
// stream gRPC does not know (deadStreamID), so that flow control still
// counts every byte and nothing holds them. Padding of a limited
// stream's DATA goes to its stream, in a padded frame of its own, so
// that the stream's window for it comes back (once the stream is
// refused, to deadStreamID like the rest). A prefix cut by the end of a frame is
// held (at most 4 bytes) and sent with the next frame of its stream.
// A message holds its declared size of the budget from its prefix to its
// last byte, or until its stream ends (END_STREAM, RST_STREAM, the
// call's context) or the connection closes. A stream is tracked from its
// header block until its END_STREAM or RST_STREAM, or its call has ended
// and room is needed (startStream).
//
// Read is called by gRPC's reader alone, and pending is set on that
// goroutine (the tap), so the fields need no lock.
type framedConn struct {
	net.Conn
	in, out     []byte
	prefaceLeft int
	// block is the stream whose header block ended the bytes last
	// handed out (0 = none); pending is what the tap made of it.
	// blockEnds: that block's HEADERS frame ended its stream.
	block     uint32
	blockEnds bool
	pending   *callLimit
	streams   map[uint32]*framedStream
	// raw: a frame over maxFrameLen came, which gRPC answers by closing
	// the connection; what follows is handed on as is.
	raw bool
	// acct is the connection's share of the receive budget, unauth of
	// the unauthenticated calls' budget (nil in tests).
	acct, unauth *recvAccount
}

// Close gives back the connection's shares of the receive budgets.
func (f *framedConn) Close() error {
	f.closeAccounts()
	return f.Conn.Close()
}

func (f *framedConn) closeAccounts() {
	f.acct.close()
	if f.unauth != nil {
		f.unauth.close()
	}
}

// framedStream is a limited stream's place in its messages.
type framedStream struct {
	l    *callLimit
	pre  []byte // the prefix read so far, < 5 bytes between frames
	body uint32 // bytes of the current message still to come
	over bool
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

func (f *framedConn) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.block != 0 {
			id, l := f.block, f.pending
			if f.blockEnds {
				l = nil // nothing of its request is to come
			}
			f.block, f.pending, f.blockEnds = 0, nil, false
			if err := f.startStream(id, l); err != nil {
				return 0, err
			}
		}
		if f.process() {
			continue
		}
		if err := f.fill(); err != nil {
			if len(f.out) == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) == 0 {
		f.out = nil
	}
	return n, nil
}

// fill reads what the connection has into in.
func (f *framedConn) fill() error {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	n, err := f.Conn.Read(*bp)
	f.in = append(f.in, (*bp)[:n]...)
	if n > 0 {
		return nil
	}
	return err
}

// process moves the complete frames of in to out, stopping after a
// header block; it reports whether it moved anything.
func (f *framedConn) process() bool {
	moved := false
	if f.raw {
		f.out, f.in = append(f.out, f.in...), nil
		return len(f.out) > 0
	}
	if f.prefaceLeft > 0 {
		n := min(f.prefaceLeft, len(f.in))
		f.out = append(f.out, f.in[:n]...)
		f.in, f.prefaceLeft = f.in[n:], f.prefaceLeft-n
		moved = n > 0
		if f.prefaceLeft > 0 {
			return moved
		}
	}
	for len(f.in) >= frameHeaderLen {
		length := int(f.in[0])<<16 | int(f.in[1])<<8 | int(f.in[2])
		typ, flags := f.in[3], f.in[4]
		id := binary.BigEndian.Uint32(f.in[5:9]) & 0x7fffffff
		if length > maxFrameLen {
			// gRPC refuses it and closes the connection: hand it on as
			// it comes.
			f.raw = true
			f.out, f.in = append(f.out, f.in...), nil
			return true
		}
		if len(f.in) < frameHeaderLen+length {
			break
		}
		frame := f.in[:frameHeaderLen+length]
		f.in = f.in[len(frame):]
		moved = true
		switch typ {
		case frameData:
			if st := f.streams[id]; st != nil {
				f.data(id, st, flags, frame[frameHeaderLen:])
				continue
			}
		case frameRSTStream:
			f.drop(id)
		case frameHeaders, frameContinue:
			if typ == frameHeaders {
				f.blockEnds = flags&flagEndStream != 0
				if f.blockEnds {
					f.drop(id) // trailers, or a call without a body
				}
			}
			f.out = append(f.out, frame...)
			if flags&flagEndHeaders != 0 {
				f.block = id
				f.compact()
				return true
			}
			continue
		}
		f.out = append(f.out, frame...)
	}
	f.compact()
	return moved
}

// compact keeps in's unread bytes at its start, so it stays small.
func (f *framedConn) compact() {
	if len(f.in) == 0 {
		f.in = nil
	}
}

// drop forgets stream id (nothing more of it comes) and gives back what
// it holds of the budget; a prefix it held goes where flow control
// counts it.
func (f *framedConn) drop(id uint32) {
	st := f.streams[id]
	if st == nil {
		return
	}
	if len(st.pre) > 0 && !st.over {
		f.writeFrame(frameData, 0, deadStreamID, st.pre)
	}
	st.l.release()
	delete(f.streams, id)
}

// errTooManyStreams fails a connection whose maxTrackedStream tracked
// streams are all live: gRPC allows MaxStreamsPerConnection at once, so
// it never happens but for calls whose context gRPC has not cancelled
// yet; forgetting a live one would let its DATA pass unparsed.
var errTooManyStreams = errors.New("transport: too many streams in flight on the connection")

// startStream gives stream id the limit the tap made for it. When
// maxTrackedStream are tracked, those whose call has ended (its context:
// unknown methods, deadlines, refusals by an interceptor end a call
// whose client never ended its stream) are forgotten through drop; a
// live one never is.
func (f *framedConn) startStream(id uint32, l *callLimit) error {
	if l == nil {
		return nil
	}
	if len(f.streams) >= maxTrackedStream {
		for sid, st := range f.streams {
			if st.l.done.Load() {
				f.drop(sid)
			}
		}
		if len(f.streams) >= maxTrackedStream {
			return errTooManyStreams
		}
	}
	f.streams[id] = &framedStream{l: l}
	return nil
}

// data hands on a DATA frame of a limited stream.
func (f *framedConn) data(id uint32, st *framedStream, flags byte, payload []byte) {
	end := flags&flagEndStream != 0
	data := payload
	if flags&flagPadded != 0 {
		if len(payload) == 0 || int(payload[0]) > len(payload)-1 {
			// gRPC closes the connection for it.
			f.writeFrame(frameData, flags, id, payload)
			return
		}
		data = payload[1 : len(payload)-int(payload[0])]
		pad := append([]byte{payload[0]}, payload[1+len(data):]...)
		if st.over {
			f.writeFrame(frameData, 0, deadStreamID, pad)
		} else {
			// A frame of its own, padding alone, on the stream: gRPC
			// gives back the stream's window for it at once. (Kept
			// apart so that the rewritten frame, which a held prefix
			// lengthens, needs no room for it.)
			f.writeFrame(frameData, flagPadded, id, pad)
		}
	}
	if end {
		// Nothing more of the stream comes: a message cut short gives
		// back its hold once this frame is handed on.
		delete(f.streams, id)
		defer st.l.release()
	}
	if st.over {
		if len(data) > 0 {
			f.writeFrame(frameData, 0, deadStreamID, data)
		}
		return
	}
	start := len(f.out) + frameHeaderLen // where this frame's data will be
	f.out = append(f.out, make([]byte, frameHeaderLen)...)
	emit := func(b []byte) {
		// A frame of the stream holds at most maxFrameLen: past it
		// (the held prefix makes it longer) another starts.
		for len(b) > 0 {
			room := maxFrameLen - (len(f.out) - start)
			if room == 0 {
				f.endFrame(start, 0, id)
				f.out = append(f.out, make([]byte, frameHeaderLen)...)
				start = len(f.out)
				continue
			}
			n := min(room, len(b))
			f.out = append(f.out, b[:n]...)
			b = b[n:]
		}
	}
	for i := 0; i < len(data); {
		if st.body > 0 {
			n := min(int(st.body), len(data)-i)
			emit(data[i : i+n])
			st.body -= uint32(n)
			i += n
			if st.body == 0 {
				st.l.release() // the message's last byte is gRPC's
			}
			continue
		}
		n := min(grpcPrefixLen-len(st.pre), len(data)-i)
		st.pre = append(st.pre, data[i:i+n]...)
		i += n
		if len(st.pre) < grpcPrefixLen {
			break
		}
		declared := binary.BigEndian.Uint32(st.pre[1:])
		over := declared > st.l.limit
		if over {
			st.l.declared.Store(declared)
		}
		if over || !st.l.reserve(declared) {
			st.over = true
			emit(make([]byte, grpcPrefixLen)) // an empty message
			f.endFrame(start, flagEndStream, id)
			if i < len(data) {
				f.writeFrame(frameData, 0, deadStreamID, data[i:])
			}
			return
		}
		emit(st.pre)
		st.pre, st.body = st.pre[:0], declared
	}
	if end {
		emit(st.pre) // a cut prefix: gRPC reports the message cut short
		st.pre = nil
	}
	var fl byte
	if end {
		fl = flagEndStream
	}
	f.endFrame(start, fl, id)
}

// endFrame writes the header of the frame whose payload starts at start
// in out and runs to its end.
func (f *framedConn) endFrame(start int, flags byte, id uint32) {
	putFrameHeader(f.out[start-frameHeaderLen:start], len(f.out)-start, frameData, flags, id)
}

func (f *framedConn) writeFrame(typ, flags byte, id uint32, payload []byte) {
	var h [frameHeaderLen]byte
	putFrameHeader(h[:], len(payload), typ, flags, id)
	f.out = append(append(f.out, h[:]...), payload...)
}

func putFrameHeader(h []byte, length int, typ, flags byte, id uint32) {
	h[0], h[1], h[2] = byte(length>>16), byte(length>>8), byte(length)
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:9], id)
}
