package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// sizes is a SandboxService that answers the size of what it got:
// GetExecution the length of its id (in execution_id), Execute the
// length of its code (in output). calls counts the calls its handlers
// saw.
type sizes struct {
	sandboxv1.UnimplementedSandboxServiceServer
	calls atomic.Int64
}

func (s *sizes) GetExecution(_ context.Context, r *sandboxv1.GetExecutionRequest) (*sandboxv1.GetExecutionResponse, error) {
	s.calls.Add(1)
	return &sandboxv1.GetExecutionResponse{ExecutionId: strings.Repeat("x", min(len(r.GetExecutionId()), 16)), OutputLength: int64(len(r.GetExecutionId()))}, nil
}

func (s *sizes) Execute(_ context.Context, r *sandboxv1.ExecuteRequest) (*sandboxv1.ExecuteResponse, error) {
	s.calls.Add(1)
	return &sandboxv1.ExecuteResponse{Output: strings.Repeat("y", len(r.GetCode())%10)}, nil
}

// serveFull serves health and srv as the supervisor does: ListenServer's
// bounds, then ServerSecurity's options, on a unix socket. It returns
// the client's Config (without c's token).
func serveFull(t *testing.T, c Config, srv sandboxv1.SandboxServiceServer) Config {
	t.Helper()
	cc, _ := serveWithGuard(t, c, srv)
	return cc
}

// serveWithGuard is serveFull, also returning the listener's guard.
func serveWithGuard(t *testing.T, c Config, srv sandboxv1.SandboxServiceServer) (Config, *guard) {
	t.Helper()
	c.SocketPath = shortSocket(t)
	lis, opts, err := c.ListenServer()
	if err != nil {
		t.Fatal(err)
	}
	sec, err := c.ServerSecurity()
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(append(opts, sec.Options...)...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	sandboxv1.RegisterSandboxServiceServer(g, srv)
	done := make(chan struct{})
	go func() { _ = g.Serve(lis); close(done) }()
	t.Cleanup(func() { g.Stop(); <-done; sec.Close() })
	return Config{SocketPath: c.SocketPath}, lis.(*guardListener).g
}

// TestTokenCheckedBeforeBody: with a token, a call without it is refused
// UNAUTHENTICATED as soon as its headers arrive, before any of its
// request is read: a client that sends headers and no message gets the
// answer (the token interceptor alone would wait for the message).
func TestTokenCheckedBeforeBody(t *testing.T) {
	srv := &sizes{}
	c := serveFull(t, Config{Token: goodToken}, srv)
	conn, err := c.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// GetExecution opened as a stream whose message is never sent.
	desc := &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}
	st, err := conn.NewStream(ctx, desc, sandboxv1.SandboxService_GetExecution_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	err = st.RecvMsg(&sandboxv1.GetExecutionResponse{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a call without the token, before its message: %v, want UNAUTHENTICATED", err)
	}
	if srv.calls.Load() != 0 {
		t.Fatal("the handler ran")
	}
	// grpc.health.v1 stays open without the token.
	if err := check(t, c); err != nil {
		t.Fatalf("health without the token: %v", err)
	}
	// With the token, the call goes through.
	c.Token = goodToken
	conn2, err := c.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	if _, err := sandboxv1.NewSandboxServiceClient(conn2).GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "abc"}); err != nil {
		t.Fatalf("with the token: %v", err)
	}
}

// TestSmallRequestLimit: a method of ids and names refuses a message
// over MaxSmallRequestBytes, RESOURCE_EXHAUSTED naming the bound, and its
// handler never runs; the connection serves on; a method carrying code
// takes up to MaxRequestBytes; with and without a token.
func TestSmallRequestLimit(t *testing.T) {
	for _, token := range []string{"", goodToken} {
		srv := &sizes{}
		c := serveFull(t, Config{Token: token}, srv)
		c.Token = token
		conn, err := c.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		client := sandboxv1.NewSandboxServiceClient(conn)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for range 3 {
			_, err = client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: strings.Repeat("i", 4<<20-64)})
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "GetExecution takes request messages of at most 65536 bytes") {
				t.Fatalf("token %q: a 4 MiB id: %v, want RESOURCE_EXHAUSTED naming the bound", token, err)
			}
		}
		if n := srv.calls.Load(); n != 0 {
			t.Fatalf("the handler ran %d times for requests over the bound", n)
		}
		resp, err := client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: strings.Repeat("i", MaxSmallRequestBytes-16)})
		if err != nil || resp.GetOutputLength() != MaxSmallRequestBytes-16 {
			t.Fatalf("an id within the bound on the same connection: %v %v", resp, err)
		}
		if _, err := client.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: strings.Repeat("c", 3<<20)}}); err != nil {
			t.Fatalf("3 MiB of code: %v", err)
		}
		if _, err := client.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: strings.Repeat("c", MaxRequestBytes)}}); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("code over MaxRequestBytes: %v, want RESOURCE_EXHAUSTED", err)
		}
		// Health calls are small calls too.
		hc := healthpb.NewHealthClient(conn)
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: strings.Repeat("s", 1<<20)}); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a 1 MiB health check: %v, want RESOURCE_EXHAUSTED", err)
		}
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("health after: %v", err)
		}
	}
}

// TestFramedConnMessages drives framedConn as gRPC does (the tap's
// limit set between a header block and the next Read) with DATA frames
// that cut a prefix across frames, pad, and declare more than the limit:
// the limited stream gets its messages whole, the one over its limit an
// empty message that ends it, and every byte the client sent still
// reaches flow control, on its stream while the stream is within its
// limit (padding too).
func TestFramedConnMessages(t *testing.T) {
	var in bytes.Buffer
	in.WriteString(http2Preface)
	fr := http2.NewFramer(&in, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	headers := func(id uint32) {
		hb.Reset()
		_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: "/x/Y"})
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(body string) []byte {
		b := make([]byte, 5, 5+len(body))
		binary.BigEndian.PutUint32(b[1:], uint32(len(body)))
		return append(b, body...)
	}
	sent := 0
	sentOn := map[uint32]int{}
	data := func(id uint32, end bool, b []byte) {
		sent += len(b)
		sentOn[id] += len(b)
		if err := fr.WriteData(id, end, b); err != nil {
			t.Fatal(err)
		}
	}
	// Stream 1 (limit 16): "hello" with its prefix cut 2+3, then
	// "world!" padded, then END_STREAM alone.
	headers(1)
	m := msg("hello")
	data(1, false, m[:2])
	data(1, false, m[2:])
	w := msg("world!")
	if err := fr.WriteDataPadded(1, false, w, make([]byte, 7)); err != nil {
		t.Fatal(err)
	}
	sent += len(w) + 8
	sentOn[1] += len(w) + 8
	data(1, true, nil)
	// Stream 3 (limit 16): 100 bytes declared, cut 4+rest, then more.
	headers(3)
	big := msg(strings.Repeat("b", 100))
	data(3, false, big[:4])
	data(3, false, big[4:60])
	data(3, true, big[60:])
	// Stream 5 (no limit): 100 bytes as they are.
	headers(5)
	data(5, true, big)

	f := &framedConn{Conn: readConn{&in}, prefaceLeft: len(http2Preface), streams: map[uint32]*framedStream{}}
	pre := make([]byte, len(http2Preface))
	if _, err := io.ReadFull(f, pre); err != nil || string(pre) != http2Preface {
		t.Fatalf("preface %q %v", pre, err)
	}
	got := map[uint32][]byte{}
	ended := map[uint32]bool{}
	limits := map[uint32]*callLimit{}
	flow, flowOn := 0, map[uint32]int{}
	rd := http2.NewFramer(nil, f)
	for {
		frame, err := rd.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch fr := frame.(type) {
		case *http2.HeadersFrame:
			// What the tap does.
			if id := fr.StreamID; id != 5 {
				limits[id] = &callLimit{method: "/x/Y", limit: 16}
				f.pending = limits[id]
			}
		case *http2.DataFrame:
			flow += int(fr.Length)
			flowOn[fr.StreamID] += int(fr.Length)
			if ended[fr.StreamID] && fr.StreamID != deadStreamID {
				t.Fatalf("DATA on stream %d after its end", fr.StreamID)
			}
			got[fr.StreamID] = append(got[fr.StreamID], fr.Data()...)
			ended[fr.StreamID] = ended[fr.StreamID] || fr.StreamEnded()
		}
	}
	if want := append(msg("hello"), msg("world!")...); !bytes.Equal(got[1], want) || !ended[1] {
		t.Errorf("stream 1 got %q (ended %v), want %q", got[1], ended[1], want)
	}
	if want := make([]byte, 5); !bytes.Equal(got[3], want) || !ended[3] {
		t.Errorf("stream 3 got %q (ended %v), want an empty message and its end", got[3], ended[3])
	}
	if limits[3].declared.Load() != 100 || limits[1].declared.Load() != 0 {
		t.Errorf("declared past the limit: stream 1 %d, stream 3 %d", limits[1].declared.Load(), limits[3].declared.Load())
	}
	if !bytes.Equal(got[5], big) || !ended[5] {
		t.Errorf("stream 5 (no limit) got %d bytes", len(got[5]))
	}
	if flow != sent {
		t.Errorf("DATA frames handed on hold %d bytes, the client sent %d", flow, sent)
	}
	// A stream within its limit gets every byte sent on it, padding too
	// (its window for them comes back).
	for _, id := range []uint32{1, 5} {
		if flowOn[id] != sentOn[id] {
			t.Errorf("DATA frames of stream %d hold %d bytes, the client sent %d on it", id, flowOn[id], sentOn[id])
		}
	}
}

// readConn is a net.Conn that reads r.
type readConn struct{ r io.Reader }

func (c readConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c readConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c readConn) Close() error                     { return nil }
func (c readConn) LocalAddr() net.Addr              { return &net.UnixAddr{} }
func (c readConn) RemoteAddr() net.Addr             { return &net.UnixAddr{} }
func (c readConn) SetDeadline(time.Time) error      { return nil }
func (c readConn) SetReadDeadline(time.Time) error  { return nil }
func (c readConn) SetWriteDeadline(time.Time) error { return nil }

// TestPeerReserve: with a token, one peer's connections that have not
// authenticated (tokenless health Watches) cannot take the last
// ReservedConnectionsPerPeer of its MaxConnectionsPerPeer: a caller of the
// same peer with the token still gets a connection and its calls through.
func TestPeerReserve(t *testing.T) {
	c := serveFull(t, Config{Token: goodToken, MaxConnectionsPerPeer: 8, ReservedConnectionsPerPeer: 2}, &sizes{})
	for range 8 {
		watch(t, c)
	}
	c.Token = goodToken
	for i := range 2 {
		conn, err := c.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := sandboxv1.NewSandboxServiceClient(conn).GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "a"}, grpc.WaitForReady(false)); err != nil {
			t.Fatalf("caller %d with the token, 8 tokenless connections of its peer open: %v", i, err)
		}
	}
	// Tokenless Watches still get in, past the oldest of theirs.
	if ok, _ := watch(t, Config{SocketPath: c.SocketPath}); !ok {
		t.Fatal("a tokenless Watch once the peer's bound was reached")
	}
}
