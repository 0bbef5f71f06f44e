package load

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/internal/h2c"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// The request side of the supervisor's memory bound: floods of requests
// that once made it hold what clients sent (SECURITY.md, "Memory").

// rawCodec sends a request already encoded ([]byte), the same bytes for
// every call, so that the flooding client does not hold a copy per call,
// and ignores the answer.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (rawCodec) Name() string                         { return "proto" }

// flood makes calls unary calls of method with req, spread over conns
// connections to sock (with token unless it is ""), all at once, and
// returns how many ended with each code.
func flood(t *testing.T, sock, token string, conns, calls int, method string, req []byte) map[codes.Code]int {
	t.Helper()
	var clients []*grpc.ClientConn
	for range conns {
		tc := transport.Config{SocketPath: sock, Token: token}
		opts, err := tc.DialOptions()
		if err != nil {
			t.Fatal(err)
		}
		if token == "" {
			opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		}
		conn, err := grpc.NewClient(tc.Target(), append(opts, grpc.WithDisableRetry())...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		clients = append(clients, conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[codes.Code]int{}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			err := clients[i%conns].Invoke(ctx, method, req, new([]byte), grpc.ForceCodecV2(rawCodec{}))
			mu.Lock()
			got[status.Code(err)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// encoded returns m's wire form.
func encoded(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fourMiBId is a GetExecution request whose execution id is 4 MB, within
// gRPC's default receive limit.
func fourMiBId(t *testing.T) []byte {
	return encoded(t, &sandboxv1.GetExecutionRequest{ExecutionId: strings.Repeat("e", 4<<20-64)})
}

// tokenServer starts `execfarm serve` with a token file and returns it,
// its socket and the token.
func tokenServer(t *testing.T, slot int) (*server, string, string) {
	t.Helper()
	const token = "load-flood-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "token")
	writeFile(t, file, token+"\n")
	s := startServer(t, slot, "--token-file", file)
	return s, filepath.Join(s.dir, "execfarm.sock"), token
}

// TestFloodUnauthenticatedRequests: 480 GetExecution calls of 4 MB
// without the token, over 4 connections, all at once, are refused
// UNAUTHENTICATED before their requests are read (the tap), and the
// supervisor's VmHWM stays under rssBound (it reached 1.33-1.48 GB when
// the token interceptor ran after each request was held whole).
func TestFloodUnauthenticatedRequests(t *testing.T) {
	requireRoot(t)
	s, sock, _ := tokenServer(t, 0)
	got := flood(t, sock, "", 4, 480, sandboxv1.SandboxService_GetExecution_FullMethodName, fourMiBId(t))
	hwm := vmHWM(t, s.proc.Pid())
	t.Logf("480 tokenless 4 MB GetExecution: codes %v; supervisor VmHWM %s (bound %s)", got, mib(hwm), mib(rssBound))
	if got[codes.Unauthenticated] != 480 {
		t.Errorf("codes %v, want 480 UNAUTHENTICATED", got)
	}
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s, over the bound %s\n%s", mib(hwm), mib(rssBound), s.logText())
	}
}

// TestFloodLongIds: 120 authenticated GetExecution calls with a 4 MB
// execution id, over 1 and then over 3 connections, are refused
// RESOURCE_EXHAUSTED as their requests arrive (a small method takes
// 64 KiB), and the supervisor's VmHWM stays under rssBound (1.85 and
// 4.05 GB when each was held whole and NOT_FOUND echoed the id whole).
func TestFloodLongIds(t *testing.T) {
	requireRoot(t)
	s, sock, token := tokenServer(t, 1)
	req := fourMiBId(t)
	for _, conns := range []int{1, 3} {
		got := flood(t, sock, token, conns, 120, sandboxv1.SandboxService_GetExecution_FullMethodName, req)
		hwm := vmHWM(t, s.proc.Pid())
		t.Logf("120 GetExecution with a 4 MB id over %d connections: codes %v; supervisor VmHWM %s (bound %s)", conns, got, mib(hwm), mib(rssBound))
		if got[codes.ResourceExhausted] != 120 {
			t.Errorf("%d connections: codes %v, want 120 RESOURCE_EXHAUSTED", conns, got)
		}
		if hwm > rssBound {
			t.Errorf("%d connections: supervisor VmHWM %s, over the bound %s\n%s", conns, mib(hwm), mib(rssBound), s.logText())
		}
	}
	// A 60 KiB id, within the bound, is answered NOT_FOUND quoting
	// 128 bytes of it.
	conn, err := transport.Config{SocketPath: sock, Token: token}.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = sandboxv1.NewSandboxServiceClient(conn).GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: strings.Repeat("e", 60<<10)})
	if msg := status.Convert(err).Message(); status.Code(err) != codes.NotFound || len(msg) > 512 {
		t.Errorf("a 60 KiB id: %v, message of %d bytes", status.Code(err), len(msg))
	}
}

// TestFloodParallelUploads: 128 uploads into one session sandbox at
// once, 2 MiB each, and the supervisor's VmHWM stays under rssBound:
// its receive windows are fixed (64 KiB a stream) where gRPC's BDP
// estimation grew them toward the client (580-595 MB in the red team's
// run; 355 MiB here before the fix, 242 MiB after).
func TestFloodParallelUploads(t *testing.T) {
	requireRoot(t)
	s := startServer(t, 0, "--max-concurrent", "2")
	c := s.sessions()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{Limits: &sandboxv1.ResourceLimits{MaxMemoryBytes: 1 << 30, WorkspaceBytes: 320 << 20}})
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, s.logText())
	}
	defer func() {
		_, _ = c.DeleteSandbox(context.Background(), &execfarmv1.DeleteSandboxRequest{SandboxId: sb.GetSandboxId()})
	}()
	const uploads, size = 128, 2 << 20
	var wg sync.WaitGroup
	var retries atomic.Int64
	errs := make(chan error, uploads)
	for i := range uploads {
		wg.Go(func() {
			n, err := upload(ctx, c, sb.GetSandboxId(), fmt.Sprintf("/workspace/f%d", i), strings.NewReader(strings.Repeat("u", size)))
			// 128 data messages of 1 MiB at once are past one
			// connection's share of the receive budget: those refused
			// try again after the RetryInfo delay, as clients should.
			for err != nil && retryable(err) && ctx.Err() == nil {
				retries.Add(1)
				time.Sleep(retryDelay(err)) // the server's advice, not a synchronisation
				n, err = upload(ctx, c, sb.GetSandboxId(), fmt.Sprintf("/workspace/f%d", i), strings.NewReader(strings.Repeat("u", size)))
			}
			if err == nil && n != size {
				err = fmt.Errorf("wrote %d bytes of %d", n, size)
			}
			if err != nil {
				errs <- fmt.Errorf("upload %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hwm := vmHWM(t, s.proc.Pid())
	t.Logf("%d parallel uploads of %d MiB (%d tried again): supervisor VmHWM %s (bound %s)", uploads, size>>20, retries.Load(), mib(hwm), mib(rssBound))
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s, over the bound %s\n%s", mib(hwm), mib(rssBound), s.logText())
	}
}

// retryable reports whether err is a refusal with a RetryInfo detail.
func retryable(err error) bool {
	return status.Code(err) == codes.ResourceExhausted && retryDelay(err) > 0
}

// retryDelay is err's RetryInfo delay, 0 without one.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			return r.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// slowCall is a unary call over a raw HTTP/2 connection whose request
// message is sent in part and then stalls.
type slowCall struct {
	sent    chan struct{} // closed once the part is sent or refused
	sentErr error         // set before sent closes
	done    chan error    // the call's gRPC status, once answered
}

// startSlow opens a call of method on cc with token and sends part bytes
// of msg (a gRPC message with its prefix).
func startSlow(ctx context.Context, cc *http.ClientConn, method, token string, msg []byte, part int) *slowCall {
	pr, pw := io.Pipe()
	call := &slowCall{sent: make(chan struct{}), done: make(chan error, 1)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://execfarm"+method, pr)
	if err != nil {
		call.sentErr = err
		close(call.sent)
		call.done <- err
		return call
	}
	req.Header.Set("content-type", "application/grpc")
	req.Header.Set("te", "trailers")
	req.Header.Set("authorization", "Bearer "+token)
	go func() {
		resp, err := cc.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			err = grpcStatusOf(resp)
		}
		call.done <- err
		_ = pr.CloseWithError(io.ErrClosedPipe) // answered: stop sending
	}()
	go func() {
		_, call.sentErr = pw.Write(msg[:part])
		close(call.sent)
	}()
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
		return fmt.Errorf("HTTP %d without grpc-status", resp.StatusCode)
	}
	if code == 0 {
		return nil
	}
	msg, _ := url.PathUnescape(h.Get("grpc-message"))
	return status.Error(codes.Code(code), msg)
}

// TestFloodSlowRequests: 8 connections with the token open 64 Execute
// calls each, every one declaring a request of 4 MiB less 64 KiB and
// sending 3 MiB of it before it stalls. The server's receive budget
// (64 MiB, 32.5 MiB a connection) takes the first 16 and refuses the rest
// RESOURCE_EXHAUSTED as their prefixes arrive, and the supervisor's
// VmHWM stays under rssBound (gRPC would otherwise hold every stalled
// request as it arrives: 1.5 GiB).
func TestFloodSlowRequests(t *testing.T) {
	requireRoot(t)
	s, sock, token := tokenServer(t, 0)
	const conns, perConn, part = 8, 64, 3 << 20
	body := encoded(t, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: strings.Repeat("c", 4<<20-64<<10)}})
	msg := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(msg[1:], uint32(len(body)))
	msg = append(msg, body...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ccs []*http.ClientConn
	defer func() {
		for _, cc := range ccs {
			cc.Close()
		}
	}()
	var calls []*slowCall
	for range conns {
		cc, err := h2c.DialUnix(ctx, sock)
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, cc)
		for range perConn {
			calls = append(calls, startSlow(ctx, cc, sandboxv1.SandboxService_Execute_FullMethodName, token, msg, part))
		}
	}
	// Every call has sent its part, or been answered.
	held, refused, other := 0, 0, map[string]int{}
	for _, c := range calls {
		select {
		case <-c.sent:
		case <-ctx.Done():
			t.Fatal("calls neither sent their part nor were answered in 2 min")
		}
		if c.sentErr == nil {
			held++
			continue
		}
		err := <-c.done
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "the server is receiving too much at once") {
			refused++
		} else {
			other[fmt.Sprint(err)]++
		}
	}
	hwm := vmHWM(t, s.proc.Pid())
	t.Logf("%d Execute calls of 4 MiB stalled after 3 MiB over %d connections: %d held, %d refused, other %v; supervisor VmHWM %s (bound %s)",
		len(calls), conns, held, refused, other, mib(hwm), mib(rssBound))
	if most := transport.DefaultReceiveBudget / len(body); held > most || held+refused != len(calls) {
		t.Errorf("%d held, %d refused for the receive budget, other answers %v: want at most %d held and the rest refused", held, refused, other, most)
	}
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s, over the bound %s\n%s", mib(hwm), mib(rssBound), s.logText())
	}
	// Once the connections close, their budget is back.
	for _, cc := range ccs {
		cc.Close()
	}
	ccs = nil
	// 4 WriteStdin calls of 3 MiB at once (12 MiB of one connection), for
	// an execution that does not exist: a refusal for the budget would be
	// RESOURCE_EXHAUSTED.
	// The server learns of the closes as it reads them: ask until then.
	stdin := encoded(t, &execfarmv1.WriteStdinRequest{ExecutionId: "none", Data: make([]byte, 3<<20)})
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := flood(t, sock, token, 1, 4, execfarmv1.SessionService_WriteStdin_FullMethodName, stdin)
		if got[codes.ResourceExhausted] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WriteStdin calls of 3 MiB 10 s after the flood's connections closed: codes %v, want none RESOURCE_EXHAUSTED", got)
		}
		time.Sleep(50 * time.Millisecond) // a poll's pace, not a synchronisation
	}
}

// TestFloodUnfinishedHeaders: 48 connections without the token each send
// a call's HEADERS frame without END_HEADERS, then 12 MiB of header
// fields in CONTINUATION frames, and never end the block. The token is
// checked once a header block ends, so only the bound on a header list
// (transport.MaxHeaderListBytes) keeps the supervisor from holding what
// each sends: its VmHWM stays under rssBound (without the bound grpc-go
// took up to 16 MiB a connection: 1.1 GB for 64 connections of 15 MiB),
// and a caller with the token is still served.
func TestFloodUnfinishedHeaders(t *testing.T) {
	requireRoot(t)
	s, sock, _ := tokenServer(t, 0)
	const conns, perConn = 48, 12 << 20
	var wg sync.WaitGroup
	var held atomic.Int64 // bytes the server took before refusing
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			go func() { _, _ = io.Copy(io.Discard, c) }()
			if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
				return
			}
			fr := http2.NewFramer(c, nil)
			if fr.WriteSettings() != nil {
				return
			}
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", sandboxv1.SandboxService_HealthCheck_FullMethodName}, {":authority", "execfarm"}, {"content-type", "application/grpc"}} {
				_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes()}) != nil {
				return
			}
			value := strings.Repeat("v", 8000)
			for sent := 0; sent < perConn; {
				hb.Reset()
				_ = enc.WriteField(hpack.HeaderField{Name: "x-pad-" + strconv.Itoa(sent), Value: value, Sensitive: true})
				if fr.WriteContinuation(1, false, hb.Bytes()) != nil {
					return // refused: the connection is closed
				}
				sent += hb.Len()
				held.Add(int64(hb.Len()))
			}
		}()
	}
	wg.Wait()
	hwm := vmHWM(t, s.proc.Pid())
	t.Logf("%d unfinished header blocks of up to %d MiB: %d MiB sent in all; supervisor VmHWM %s (bound %s)", conns, perConn>>20, held.Load()>>20, mib(hwm), mib(rssBound))
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s, over the bound %s\n%s", mib(hwm), mib(rssBound), s.logText())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{}); err != nil {
		t.Errorf("a caller after the flood: %v", err)
	}
}
