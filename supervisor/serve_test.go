package supervisor

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/net/http2"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// serveBuf serves s's gRPC server (grpcServer: interceptors and services
// as ListenAndServe has them) on an in-memory listener and returns a
// client of it; both stop at cleanup.
func serveBuf(t *testing.T, s *Server) sandboxv1.SandboxServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	g := s.grpcServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///buf", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		g.Stop()
		<-done
	})
	return sandboxv1.NewSandboxServiceClient(conn)
}

// TestHandlerPanicIsInternal: a panic in a handler, unary or streaming
// (forced here: a Server without a runner), is answered INTERNAL with a
// HANDLER_PANIC reason and logged, and the server goes on serving.
func TestHandlerPanicIsInternal(t *testing.T) {
	var logged []string
	s := &Server{
		cfg:    Config{DefaultRuntime: "goja", Defaults: limits.Default(), Ceilings: limits.DefaultCeilings()},
		reg:    registry.New(registry.Config{}),
		health: health.NewServer(),
		log:    hclog.New(&hclog.LoggerOptions{Output: writerFunc(func(p []byte) { logged = append(logged, string(p)) })}),
	}
	client := serveBuf(t, s)
	ctx := context.Background()
	_, err := client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
	checkPanicStatus(t, "HealthCheck", err)
	st, err := client.ExecuteStream(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}})
	if err == nil {
		_, err = st.Recv()
	}
	checkPanicStatus(t, "ExecuteStream", err)
	if len(logged) != 2 {
		t.Errorf("logged %d lines, want one per panic: %q", len(logged), logged)
	}
	// Still serving.
	_, err = client.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("GetExecution after the panics = %v, want NOT_FOUND", err)
	}
}

func checkPanicStatus(t *testing.T, call string, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Internal {
		t.Fatalf("%s = %v, want INTERNAL", call, err)
	}
	if info := errorInfo(st); info.GetReason() != "HANDLER_PANIC" || info.GetDomain() != ErrorDomain {
		t.Errorf("%s: ErrorInfo %v, want HANDLER_PANIC in %s", call, info, ErrorDomain)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// errorInfo returns st's ErrorInfo detail, nil if none.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if x, ok := d.(*errdetails.ErrorInfo); ok {
			return x
		}
	}
	return nil
}

// TestErrorDetailsOnTheWire: an invalid limit is INVALID_ARGUMENT with a
// BadRequest naming the field and an ErrorInfo with the reason; an
// unknown execution is NOT_FOUND with an ErrorInfo; a full queue is
// RESOURCE_EXHAUSTED with a RetryInfo. Details survive the wire.
func TestErrorDetailsOnTheWire(t *testing.T) {
	s := preparingServer(t)
	s.log, s.health = hclog.NewNullLogger(), health.NewServer()
	client := serveBuf(t, s)
	ctx := context.Background()

	_, err := client.ExecuteAsync(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"},
		Limits: &sandboxv1.ResourceLimits{MaxMemoryBytes: -1}})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("negative memory: %v, want INVALID_ARGUMENT", err)
	}
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		if x, ok := d.(*errdetails.BadRequest); ok {
			br = x
		}
	}
	if len(br.GetFieldViolations()) != 1 || br.GetFieldViolations()[0].GetField() != "limits.max_memory_bytes" ||
		br.GetFieldViolations()[0].GetDescription() != st.Message() {
		t.Errorf("negative memory: BadRequest %v, want limits.max_memory_bytes", br)
	}
	if info := errorInfo(st); info.GetReason() != "LIMIT_OUT_OF_RANGE" || info.GetDomain() != ErrorDomain {
		t.Errorf("negative memory: ErrorInfo %v", info)
	}

	_, err = client.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: "nope"})
	if st := status.Convert(err); st.Code() != codes.NotFound || errorInfo(st).GetReason() != "EXECUTION_NOT_FOUND" {
		t.Errorf("unknown execution: %v, details %v", err, st.Details())
	}
}

// TestKeepalivePolicy: a client may ping at the policy's minimum interval
// with no call in flight and keeps its connection; one that pings faster
// is sent GOAWAY ENHANCE_YOUR_CALM "too_many_pings". The policy's times
// are shortened here (20 ms); the pings are raw HTTP/2 frames, since
// gRPC clients will not ping more often than every 10 s.
func TestKeepalivePolicy(t *testing.T) {
	s := &Server{cfg: Config{DefaultRuntime: "goja"}, reg: registry.New(registry.Config{}), health: health.NewServer(), log: hclog.NewNullLogger()}
	lis := bufconn.Listen(1 << 20)
	g := s.grpcServer(keepaliveOptions(20*time.Millisecond, time.Hour, time.Minute)...)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	defer func() { g.Stop(); <-done }()

	type goAway struct {
		code  http2.ErrCode
		debug string
	}
	// pings sends n pings, interval apart, and returns the GOAWAY that
	// came before the last ping's ack, nil when none did.
	pings := func(n int, interval time.Duration) *goAway {
		c, err := lis.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fr := http2.NewFramer(c, c)
		if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		type event struct {
			ack byte // the first byte of an acked ping's data
			ga  *goAway
		}
		events := make(chan event, 64)
		go func() {
			defer close(events)
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.GoAwayFrame:
					events <- event{ga: &goAway{f.ErrCode, string(f.DebugData())}}
				case *http2.PingFrame:
					if f.IsAck() {
						events <- event{ack: f.Data[0]}
					}
				}
			}
		}()
		for i := range n {
			if err := fr.WritePing(false, [8]byte{byte(i + 1)}); err != nil {
				break // closed after a GOAWAY, which events has
			}
			if i < n-1 {
				time.Sleep(interval)
			}
		}
		for e := range events {
			switch {
			case e.ga != nil:
				return e.ga
			case e.ack == byte(n):
				return nil
			}
		}
		t.Fatal("the connection closed with neither the last ping's ack nor a GOAWAY")
		return nil
	}
	if ga := pings(5, 100*time.Millisecond); ga != nil {
		t.Errorf("pings 100 ms apart with no call in flight: GOAWAY %v %q, want the connection kept", ga.code, ga.debug)
	}
	if ga := pings(10, 0); ga == nil || ga.code != http2.ErrCodeEnhanceYourCalm || ga.debug != "too_many_pings" {
		t.Errorf("10 pings at once: GOAWAY %+v, want ENHANCE_YOUR_CALM too_many_pings", ga)
	}
}
