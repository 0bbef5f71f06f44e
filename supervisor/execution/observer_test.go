package execution

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// scripted is a Sandbox whose Run sends events, then exits with exit, or,
// when block is set, waits until its context ends.
type scripted struct {
	events  []*workerv1.RunEvent
	exit    *workerv1.Exit
	block   bool
	running chan struct{} // closed when a blocking Run has begun
}

func (s *scripted) ID() string { return "sb-scripted" }
func (s *scripted) Run(ctx context.Context, _ *workerv1.RunRequest, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	for _, ev := range s.events {
		onEvent(ev)
	}
	if s.block {
		close(s.running)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.exit, nil
}
func (s *scripted) Usage() (cgroup.Usage, error) { return cgroup.Usage{}, nil }
func (s *scripted) Uses() int                    { return 0 }
func (s *scripted) Sample()                      {}
func (s *scripted) ServeBroker(func(*grpc.Server), ...grpc.ServerOption) (uint32, error) {
	return 0, nil
}

// held is a Placement that hands out one Sandbox and keeps it, as a
// session does; it records its calls.
type held struct {
	sb    Sandbox
	mu    sync.Mutex
	calls []string
}

func (h *held) record(s string) { h.mu.Lock(); h.calls = append(h.calls, s); h.mu.Unlock() }
func (h *held) Acquire(context.Context, string, sandbox.Spec) (Sandbox, error) {
	h.record("acquire")
	return h.sb, nil
}
func (h *held) Kill(Sandbox) error { h.record("kill"); return nil }
func (h *held) Release(_ string, _ Sandbox, reusable bool, publish func()) {
	h.record(fmt.Sprintf("release reusable=%v", reusable))
	publish()
}

// recorder is an Observer writing down what it is told.
type recorder struct {
	mu     sync.Mutex
	log    []string
	closed chan struct{}
}

func (o *recorder) add(s string)                  { o.mu.Lock(); o.log = append(o.log, s); o.mu.Unlock() }
func (o *recorder) Created(e *registry.Execution) { o.add("created " + e.State().String()) }
func (o *recorder) Output(s registry.Stream, p []byte) {
	o.add(s.String() + " " + string(p))
}
func (o *recorder) Finished(e *registry.Execution, res registry.Result) {
	// Before any waiter can see the result.
	seen := false
	select {
	case <-e.Done():
		seen = true
	default:
	}
	o.add(fmt.Sprintf("finished %s seen=%v stdout_bytes=%d", res.State, seen, res.StdoutBytes))
	close(o.closed)
}

// TestObserverSeesTheRunInOrder: a run in a held sandbox tells its
// Observer of its creation, each output chunk, and its result before any
// waiter sees it, in that order; the Placement keeps the sandbox
// (release, no kill).
func TestObserverSeesTheRunInOrder(t *testing.T) {
	r := newRunner(t, 1, 1)
	out := func(s string) *workerv1.RunEvent {
		return &workerv1.RunEvent{Event: &workerv1.RunEvent_Stdout{Stdout: []byte(s)}}
	}
	sb := &scripted{events: []*workerv1.RunEvent{out("one "), {Event: &workerv1.RunEvent_Stderr{Stderr: []byte("oops")}}, out("two")},
		exit: &workerv1.Exit{ExitCode: 0}}
	p := &held{sb: sb}
	o := &recorder{closed: make(chan struct{})}
	j := job()
	j.Observer, j.Owner, j.SandboxID = o, "token:a", "sb-scripted"
	e, err := r.SubmitIn(p, j)
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, e)
	<-o.closed
	if res.State != registry.StateCompleted || res.SandboxID != "sb-scripted" {
		t.Fatalf("result %+v", res)
	}
	if m := e.Meta(); m.Owner != "token:a" || m.SandboxID != "sb-scripted" {
		t.Errorf("meta %+v", m)
	}
	want := "created pending|stdout one |stderr oops|stdout two|finished completed seen=false stdout_bytes=7"
	if got := strings.Join(o.log, "|"); got != want {
		t.Errorf("observer saw\n%s\nwant\n%s", got, want)
	}
	if got := strings.Join(p.calls, "|"); got != "acquire|release reusable=true" {
		t.Errorf("placement calls %s", got)
	}
}

// TestObserverOfACancelledRun: a cancel reaches the held sandbox through
// Kill, and the Observer still hears the end.
func TestObserverOfACancelledRun(t *testing.T) {
	r := newRunner(t, 1, 1)
	sb := &scripted{block: true, running: make(chan struct{})}
	p := &held{sb: sb}
	o := &recorder{closed: make(chan struct{})}
	j := job()
	j.Observer = o
	e, err := r.SubmitIn(p, j)
	if err != nil {
		t.Fatal(err)
	}
	<-sb.running
	if _, err := e.Cancel(); err != nil {
		t.Fatal(err)
	}
	if res := wait(t, e); res.State != registry.StateCancelled {
		t.Fatalf("result %+v, want CANCELLED", res)
	}
	<-o.closed
	if got := o.log[len(o.log)-1]; got != "finished cancelled seen=false stdout_bytes=0" {
		t.Errorf("last observation %q", got)
	}
	if got := strings.Join(p.calls, "|"); got != "acquire|kill|release reusable=false" {
		t.Errorf("placement calls %s, want the cancel to kill through the placement", got)
	}
}
