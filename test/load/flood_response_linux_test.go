package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// Floods of responses (issue 25, item 1): many clients asking at once
// for what the supervisor answers large. Each runs against `execfarm
// serve` with default settings and asserts the supervisor's high-water
// mark (VmHWM) stays under rssBound.

// dialMany opens n more client connections to s (each a connection of
// its own: the per-connection bounds do not shelter the server).
func dialMany(t *testing.T, s *server, n int) []*grpc.ClientConn {
	t.Helper()
	conns := make([]*grpc.ClientConn, n)
	for i := range conns {
		c, err := clientConfig(s.dir+"/execfarm.sock", nil).Dial()
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// TestFloodSubscribers: 960 SubscribeEvents streams on one sandbox, over
// 8 connections, while one exec prints 8 MiB. Subscribers past the bound
// per sandbox are refused RESOURCE_EXHAUSTED naming it; of those
// admitted, half read everything and half read nothing. The supervisor
// stays under rssBound (before: 2.6–2.7 GB), and every reader saw the exec
// end or was cut off behind the log (OUT_OF_RANGE).
func TestFloodSubscribers(t *testing.T) {
	requireRoot(t)
	s := startServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.sessions()
	sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, s.logText())
	}
	conns := dialMany(t, s, 8)
	const subscribers = 960
	var (
		wg, readers                                 sync.WaitGroup
		admitted, refused, sawEnd, cutOff, nReaders atomic.Int64
		refusal                                     atomic.Value
		otherErrs                                   sync.Map
		subCtx, stopSubscribers                     = context.WithCancel(ctx)
		started                                     = make(chan struct{}, subscribers)
	)
	defer stopSubscribers()
	for i := range subscribers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := execfarmv1.NewSessionServiceClient(conns[i%len(conns)])
			st, err := sc.SubscribeEvents(subCtx, &execfarmv1.SubscribeEventsRequest{SandboxId: sb.GetSandboxId()})
			if err != nil {
				started <- struct{}{}
				otherErrs.Store(i, err)
				return
			}
			// The first event (ready) or the refusal.
			if _, err := st.Recv(); err != nil {
				started <- struct{}{}
				if status.Code(err) == codes.ResourceExhausted {
					refused.Add(1)
					refusal.Store(err.Error())
				} else if subCtx.Err() == nil {
					otherErrs.Store(i, err)
				}
				return
			}
			if admitted.Add(1)%2 == 0 {
				started <- struct{}{}
				<-subCtx.Done() // a subscriber that never reads
				return
			}
			nReaders.Add(1)
			readers.Add(1)
			defer readers.Done()
			started <- struct{}{}
			for n := 0; ; n++ {
				m, err := st.Recv()
				switch {
				case err != nil && subCtx.Err() != nil:
					return // stopped
				case err != nil:
					// Cut off when it fell behind the log's bound:
					// OUT_OF_RANGE naming the first offset held.
					cutOff.Add(1)
					if status.Code(err) != codes.OutOfRange {
						otherErrs.Store(i, fmt.Errorf("after %d events: %w", n, err))
					}
					return
				case m.GetSandboxId() != sb.GetSandboxId():
					otherErrs.Store(i, fmt.Errorf("event %d of sandbox %q", m.GetOffset(), m.GetSandboxId()))
					return
				case m.GetExecEnded() != nil:
					sawEnd.Add(1)
					return
				}
			}
		}()
	}
	for range subscribers {
		<-started
	}
	resetHWM(t, s.proc.Pid())
	// One exec prints 8 MiB of 4 KiB lines, as fast as it can, while they
	// are subscribed (a reader that falls behind the log's 2 MiB is cut
	// off).
	out, res, err := execOut(ctx, c, sb.GetSandboxId(), "head -c 8388608 /dev/zero | tr '\\0' x | fold -w 4095; echo done")
	if err != nil || res.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED || !strings.HasSuffix(out, "done\n") {
		t.Errorf("exec: %v %v (%d bytes)", err, res, len(out))
	}
	// The readers reach the exec's end or are cut off behind the log.
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone:
	case <-time.After(time.Minute):
		t.Errorf("readers still reading a minute after the exec ended")
	}
	checkHWM(t, s, fmt.Sprintf("%d subscribers", subscribers))
	stopSubscribers()
	wg.Wait()
	otherErrs.Range(func(k, v any) bool {
		t.Errorf("subscriber %v: %v", k, v)
		return true
	})
	t.Logf("%d admitted, %d refused; of the readers %d saw the exec end, %d were cut off behind the log", admitted.Load(), refused.Load(), sawEnd.Load(), cutOff.Load())
	if sawEnd.Load()+cutOff.Load() != nReaders.Load() {
		t.Errorf("%d readers saw the end and %d were cut off, of %d", sawEnd.Load(), cutOff.Load(), nReaders.Load())
	}
	if admitted.Load() == 0 || admitted.Load() >= subscribers || admitted.Load()+refused.Load() != subscribers {
		t.Errorf("%d subscribers admitted and %d refused of %d: want a bound per sandbox", admitted.Load(), refused.Load(), subscribers)
	}
	if msg, _ := refusal.Load().(string); refused.Load() > 0 && !strings.Contains(msg, "subscribers") {
		t.Errorf("the refusal does not name the bound: %s", msg)
	}
}

// TestFloodGetExecutionPages: 360 parallel GetExecution calls, 3 on each
// of 120 connections, each asking for the first page (1 MiB per stream)
// of an execution that keeps 2 × 64 MiB, all at once and read at once.
// Every page arrives whole; the supervisor stays under rssBound (before,
// every page was built before it waited for room to be sent: 1.2–1.3 GB).
func TestFloodGetExecutionPages(t *testing.T) {
	requireRoot(t)
	s := startServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := shell("head -c 67108864 /dev/zero | tr '\\0' a; head -c 67108864 /dev/zero | tr '\\0' b >&2", 120_000)
	req.Limits.MaxOutputBytes = 64 << 20
	r, err := s.client.Execute(ctx, req)
	if err != nil || r.GetState() != sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
		t.Fatalf("Execute: %v %v", err, r.GetState())
	}
	id := r.GetOutcome().GetExecutionId()
	if hwm := vmHWM(t, s.proc.Pid()); hwm > 0 {
		t.Logf("supervisor VmHWM before the pages: %s (the execution's run); reset", mib(hwm))
	}
	resetHWM(t, s.proc.Pid())
	conns := dialMany(t, s, 120)
	const calls = 360
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	gate := make(chan struct{})
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := sandboxv1.NewSandboxServiceClient(conns[i%len(conns)])
			<-gate
			off := int64(i%8) << 20
			g, err := cl.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, OutputOffset: off, ErrorOutputOffset: off})
			switch {
			case err != nil:
				errs <- err
			case len(g.GetOutput()) != 1<<20 || len(g.GetErrorOutput()) != 1<<20:
				errs <- fmt.Errorf("page at %d: %d + %d bytes, want 1 MiB each", off, len(g.GetOutput()), len(g.GetErrorOutput()))
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 3 {
			t.Errorf("GetExecution: %v", err)
		}
	}
	if n > 3 {
		t.Errorf("... %d calls failed in all", n)
	}
	t.Logf("%d pages in %v", calls, time.Since(start))
	checkHWM(t, s, fmt.Sprintf("%d parallel pages", calls))
}
