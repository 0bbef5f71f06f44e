package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/transport"
)

// The request side of the supervisor's memory bound: floods of requests
// that once made it hold what clients sent (SECURITY.md, "Memory").

// floodHWM returns the peak resident set size of process pid since it
// started (VmHWM), bytes.
func floodHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

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
	hwm := floodHWM(t, s.proc.Pid())
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
		hwm := floodHWM(t, s.proc.Pid())
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
	errs := make(chan error, uploads)
	for i := range uploads {
		wg.Go(func() {
			n, err := upload(ctx, c, sb.GetSandboxId(), fmt.Sprintf("/workspace/f%d", i), strings.NewReader(strings.Repeat("u", size)))
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
	hwm := floodHWM(t, s.proc.Pid())
	t.Logf("%d parallel uploads of %d MiB: supervisor VmHWM %s (bound %s)", uploads, size>>20, mib(hwm), mib(rssBound))
	if hwm > rssBound {
		t.Errorf("supervisor VmHWM %s, over the bound %s\n%s", mib(hwm), mib(rssBound), s.logText())
	}
}
