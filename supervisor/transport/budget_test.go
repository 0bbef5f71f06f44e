package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/internal/h2c"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// pump reads f as gRPC does until its input is exhausted, giving each
// stream whose header block it hands out the limit limits returns (what
// the tap does), and returns what it read.
func pump(t *testing.T, f *framedConn, limits func(id uint32) *callLimit) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if f.block != 0 && f.pending == nil {
			f.pending = limits(f.block)
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFramedConnBudget drives framedConn with the receive budget: a
// message takes its declared size at its prefix and gives it back at its
// last byte, at RST_STREAM, at END_STREAM cutting it short, at its
// call's end and at Close; a message that does not fit, in its
// connection's share or in all, is refused as one over its limit is, and
// says why.
func TestFramedConnBudget(t *testing.T) {
	b := &recvBudget{max: 300, perConn: 200}
	var in1, in2 bytes.Buffer
	fr1, fr2 := http2.NewFramer(&in1, nil), http2.NewFramer(&in2, nil)
	in1.WriteString(http2Preface)
	in2.WriteString(http2Preface)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	headers := func(fr *http2.Framer, id uint32) {
		hb.Reset()
		_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: "/x/Y"})
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	prefix := func(n uint32) []byte {
		p := make([]byte, 5)
		binary.BigEndian.PutUint32(p[1:], n)
		return p
	}
	data := func(fr *http2.Framer, id uint32, end bool, b []byte) {
		if err := fr.WriteData(id, end, b); err != nil {
			t.Fatal(err)
		}
	}
	f1 := &framedConn{Conn: readConn{&in1}, prefaceLeft: len(http2Preface), streams: map[uint32]*framedStream{}, acct: b.account()}
	f2 := &framedConn{Conn: readConn{&in2}, prefaceLeft: len(http2Preface), streams: map[uint32]*framedStream{}, acct: b.account()}
	calls := map[*framedConn]map[uint32]*callLimit{f1: {}, f2: {}}
	limitsOf := func(f *framedConn) func(uint32) *callLimit {
		return func(id uint32) *callLimit {
			l := &callLimit{method: "/x/Y", limit: 1000, acct: f.acct}
			calls[f][id] = l
			return l
		}
	}
	used := func(want int64, what string) {
		t.Helper()
		if got := b.used.Load(); got != want {
			t.Fatalf("%s: %d bytes of the budget used, want %d", what, got, want)
		}
	}
	busy := func(l *callLimit, n uint32, where string) {
		t.Helper()
		if l.busy.Load() != n {
			t.Fatalf("refused for the budget: %d, want %d", l.busy.Load(), n)
		}
		err := l.err()
		st := status.Convert(err)
		if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "the server is receiving too much at once") || !strings.Contains(st.Message(), where) {
			t.Fatalf("refusal %v, want RESOURCE_EXHAUSTED saying the server is receiving too much, on %s", err, where)
		}
		retry := false
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok && r.GetRetryDelay().AsDuration() > 0 {
				retry = true
			}
		}
		if !retry {
			t.Fatalf("refusal %v has no RetryInfo", err)
		}
	}
	pre := make([]byte, len(http2Preface))
	if _, err := io.ReadFull(f1, pre); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f2, pre); err != nil {
		t.Fatal(err)
	}

	// Stream 1 declares 150 and sends 50 of them: it holds 150.
	headers(fr1, 1)
	data(fr1, 1, false, append(prefix(150), make([]byte, 50)...))
	pump(t, f1, limitsOf(f1))
	used(150, "a message of 150 bytes begun")
	// Stream 3 declares 100: past the connection's 200.
	headers(fr1, 3)
	data(fr1, 3, false, append(prefix(100), make([]byte, 30)...))
	out := pump(t, f1, limitsOf(f1))
	used(150, "a message refused")
	busy(calls[f1][3], 100, "one connection")
	if !bytes.Contains(out, append([]byte{0, 0, 5, frameData, flagEndStream, 0, 0, 0, 3}, prefix(0)...)) {
		t.Fatalf("the refused stream did not get an empty message ending it: % x", out)
	}
	// Stream 1's last 100 bytes: released; its next message holds 120.
	data(fr1, 1, false, make([]byte, 100))
	pump(t, f1, limitsOf(f1))
	used(0, "a message's last byte handed on")
	data(fr1, 1, false, append(prefix(120), make([]byte, 10)...))
	pump(t, f1, limitsOf(f1))
	used(120, "the stream's next message begun")
	// RST_STREAM gives it back.
	if err := fr1.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	pump(t, f1, limitsOf(f1))
	used(0, "the stream reset")

	// Stream 5 holds 180 of connection 1; connection 2's stream 1 asks
	// 150: past the server's 300.
	headers(fr1, 5)
	data(fr1, 5, false, prefix(180))
	pump(t, f1, limitsOf(f1))
	used(180, "stream 5 begun")
	headers(fr2, 1)
	data(fr2, 1, false, prefix(150))
	pump(t, f2, limitsOf(f2))
	used(180, "a message past the server's budget")
	busy(calls[f2][1], 150, "the server")
	// Connection 1 closes: connection 2 gets the room.
	if err := f1.Close(); err != nil {
		t.Fatal(err)
	}
	used(0, "the connection closed")
	headers(fr2, 3)
	data(fr2, 3, false, append(prefix(200), make([]byte, 20)...))
	pump(t, f2, limitsOf(f2))
	used(200, "a message after the close")
	// END_STREAM cutting the message short gives it back.
	data(fr2, 3, true, make([]byte, 20))
	pump(t, f2, limitsOf(f2))
	used(0, "the stream ended with its message cut short")
	// The call's end (its context) gives back what its stream holds.
	headers(fr2, 5)
	data(fr2, 5, false, prefix(90))
	pump(t, f2, limitsOf(f2))
	used(90, "stream 5 of connection 2 begun")
	calls[f2][5].finish()
	used(0, "the call ended")
	// Its next message, after the end, takes nothing.
	data(fr2, 5, false, make([]byte, 90))
	data(fr2, 5, false, prefix(60))
	pump(t, f2, limitsOf(f2))
	used(0, "a message of a call that ended")
}

// serveBudget serves health and srv as serveFull does, and returns the
// client's Config and the server's receive budget.
func serveBudget(t *testing.T, c Config, srv sandboxv1.SandboxServiceServer) (Config, *recvBudget) {
	t.Helper()
	cc, g := serveWithGuard(t, c, srv)
	return cc, g.recv
}

// rawConn is an HTTP/2 connection to a gRPC server that sends request
// messages as slowly as its caller wants.
type rawConn struct {
	cc *http.ClientConn
}

func dialRaw(t *testing.T, sock string) *rawConn {
	t.Helper()
	cc, err := h2c.DialUnix(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &rawConn{cc: cc}
}

// rawCall is a call whose request message is being sent.
type rawCall struct {
	body   *io.PipeWriter
	msg    []byte
	part   int
	sent   chan struct{} // closed once the first part is sent (or refused)
	cancel context.CancelFunc
	done   chan error // the call's gRPC status (nil: OK)
}

// finish sends the rest of the message and ends the request.
func (c *rawCall) finish() {
	go func() {
		<-c.sent
		_, _ = c.body.Write(c.msg[c.part:])
		_ = c.body.Close()
	}()
}

// start opens a call of method and sends the first part of its one
// request message, msg whole with its prefix.
func (c *rawConn) start(t *testing.T, method string, msg []byte, part int) *rawCall {
	t.Helper()
	return c.startWith(t, method, msg, part, nil)
}

// startWith is start with more request headers.
func (c *rawConn) startWith(t *testing.T, method string, msg []byte, part int, header http.Header) *rawCall {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://x"+method, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/grpc")
	req.Header.Set("te", "trailers")
	for k, v := range header {
		req.Header[k] = v
	}
	call := &rawCall{body: pw, msg: msg, part: part, sent: make(chan struct{}), cancel: cancel, done: make(chan error, 1)}
	go func() {
		resp, err := c.cc.RoundTrip(req)
		if err != nil {
			call.done <- err
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_ = pr.CloseWithError(io.ErrClosedPipe) // the call is over: stop sending
		call.done <- grpcStatusOf(resp)
	}()
	go func() { _, _ = pw.Write(msg[:part]); close(call.sent) }()
	return call
}

// grpcStatusOf is the gRPC status of a response read to its end.
func grpcStatusOf(resp *http.Response) error {
	h := resp.Trailer
	if resp.Header.Get("grpc-status") != "" {
		h = resp.Header // trailers only
	}
	code, err := strconv.Atoi(h.Get("grpc-status"))
	if err != nil {
		return errors.New("no grpc-status")
	}
	if code == 0 {
		return nil
	}
	if d := h.Get("grpc-status-details-bin"); d != "" {
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(d, "="))
		var p spb.Status
		if err == nil && proto.Unmarshal(raw, &p) == nil {
			return status.FromProto(&p).Err()
		}
	}
	msg := h.Get("grpc-message")
	return status.Error(codes.Code(code), msg)
}

// framed is m's gRPC message: its prefix and its wire form.
func framed(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(p[1:], uint32(len(b)))
	return append(p, b...)
}

// wantBusy checks that call was refused for the receive budget.
func wantBusy(t *testing.T, call *rawCall, where string) {
	t.Helper()
	err := <-call.done
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "the server is receiving too much at once") || !strings.Contains(st.Message(), where) {
		t.Fatalf("a request past the budget (%s): %v, want RESOURCE_EXHAUSTED saying the server is receiving too much", where, err)
	}
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			return
		}
	}
	t.Fatalf("refusal %v has no RetryInfo", err)
}

// TestReceiveBudget: Execute requests of 3 MiB, sent in part and
// stalled, hold the server's receive budget (8 MiB here, 4 MiB a
// connection): past the connection's share, and past the server's,
// the next is refused RESOURCE_EXHAUSTED, retryable, without waiting
// and without its handler; a request sent whole gives its bytes back,
// and so do a reset stream and a closed connection, to the last byte.
func TestReceiveBudget(t *testing.T) {
	srv := &sizes{}
	c, b := serveBudget(t, Config{ReceiveBudget: 8 << 20, ReceiveBudgetPerConnection: 4 << 20}, srv)
	msg := framed(t, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: strings.Repeat("c", 3<<20)}})
	declared := int64(len(msg) - 5)
	execute := sandboxv1.SandboxService_Execute_FullMethodName
	usedIs := func(want int64, what string) {
		t.Helper()
		eventually(t, what, func() bool { return b.used.Load() == want })
	}
	a, bconn, cconn := dialRaw(t, c.SocketPath), dialRaw(t, c.SocketPath), dialRaw(t, c.SocketPath)

	s1 := a.start(t, execute, msg, 64<<10)
	usedIs(declared, "the first request begun")
	wantBusy(t, a.start(t, execute, msg, 64<<10), "one connection")
	s3 := bconn.start(t, execute, msg, 5)
	usedIs(2*declared, "a request on a second connection begun")
	wantBusy(t, cconn.start(t, execute, msg, 5), "the server")
	// s1 sent whole: answered, its bytes given back.
	s1.finish()
	if err := <-s1.done; err != nil {
		t.Fatalf("the first request, sent whole: %v", err)
	}
	usedIs(declared, "a request received whole")
	s5 := cconn.start(t, execute, msg, 1<<20)
	usedIs(2*declared, "a request after the room was given back")
	// A reset stream gives its bytes back.
	s5.cancel()
	<-s5.done
	usedIs(declared, "a stream reset")
	// A call whose deadline passes while its request is sent in part
	// (the server ends its stream; the client sends nothing more).
	s7 := cconn.startWith(t, execute, msg, 1<<20, http.Header{"Grpc-Timeout": {"2S"}})
	usedIs(2*declared, "a request with a deadline begun")
	// The server answers DEADLINE_EXCEEDED, or resets the stream when
	// its timer wins.
	if err := <-s7.done; err == nil {
		t.Fatal("a request past its deadline: answered OK")
	}
	usedIs(declared, "a call past its deadline")
	// A closed connection too.
	bconn.cc.Close()
	<-s3.done
	usedIs(0, "a connection closed")
	if n := srv.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1 (the request sent whole)", n)
	}
	// The connections refused serve on.
	s6 := a.start(t, execute, msg, 5)
	s6.finish()
	if err := <-s6.done; err != nil {
		t.Fatalf("a request on the connection once refused: %v", err)
	}
	usedIs(0, "every request over")
}

// TestReceiveBudgetConfig: a budget that cannot take one request of
// MaxRequestBytes is refused.
func TestReceiveBudgetConfig(t *testing.T) {
	for _, c := range []Config{{ReceiveBudgetPerConnection: MaxRequestBytes - 1}, {ReceiveBudget: 8 << 20, ReceiveBudgetPerConnection: 16 << 20}} {
		c.SocketPath = shortSocket(t)
		if lis, _, err := c.ListenServer(); err == nil {
			lis.Close()
			t.Errorf("budget %d, %d a connection: no error", c.ReceiveBudget, c.ReceiveBudgetPerConnection)
		}
	}
}
