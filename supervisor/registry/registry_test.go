package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/execfarm/execfarm/supervisor/nodeid"
)

func TestGet(t *testing.T) {
	r := New(Config{})
	e := r.Create(Meta{Runtime: "goja"})
	got, err := r.Get(e.ID())
	if err != nil || got != e {
		t.Fatalf("Get(%q) = %v, %v", e.ID(), got, err)
	}
	if _, err := r.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
	}
	if !strings.HasPrefix(ErrNotFound.Error(), "registry: ") {
		t.Errorf("sentinel message %q lacks the package prefix", ErrNotFound)
	}
	if p, err := nodeid.Parse(e.ID()); err != nil || p.Node != "localhost" {
		t.Errorf("id %q does not name the node: %+v, %v", e.ID(), p, err)
	}
}

// TestGetNamesTheOwner: an id the registry does not hold is told apart by
// what it names: another node, an earlier run of this node's supervisor,
// no supervisor at all, or this run (then it is merely not found).
func TestGetNamesTheOwner(t *testing.T) {
	mk := func(node string) *nodeid.Issuer {
		i, err := nodeid.NewIssuer(node)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	here := mk("node-a")
	r := New(Config{IDs: here})
	if e := r.Create(Meta{}); !strings.HasPrefix(e.ID(), "node-a_") {
		t.Errorf("id %q does not start with the node's name", e.ID())
	}
	if r.Node() != "node-a" {
		t.Errorf("Node() = %q", r.Node())
	}
	var other *nodeid.OtherNodeError
	if _, err := r.Get(mk("node-b").New()); !errors.As(err, &other) || other.Owner != "node-b" || errors.Is(err, ErrNotFound) {
		t.Errorf("another node's id: %v", err)
	}
	var earlier *nodeid.EarlierRunError
	if _, err := r.Get(mk("node-a").New()); !errors.As(err, &earlier) || earlier.Node != "node-a" {
		t.Errorf("an earlier run's id: %v", err)
	}
	if _, err := r.Get("0a2ad6a2-7b1c-4c1e-9f1e-0123456789ab"); !errors.Is(err, ErrNotFound) || !errors.Is(err, nodeid.ErrMalformed) {
		t.Errorf("a malformed id: %v", err)
	}
	if _, err := r.Get(here.New()); !errors.Is(err, ErrNotFound) || errors.Is(err, nodeid.ErrMalformed) {
		t.Errorf("this run's id, never made: %v", err)
	}
}

func ids(infos []Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.ID
	}
	return out
}

func TestList(t *testing.T) {
	clock := newFakeClock()
	r := New(Config{Now: clock.Now})
	var execs []*Execution
	for range 10 {
		execs = append(execs, r.Create(Meta{CodePreview: "code"}))
		clock.Advance(time.Second)
	}
	// 0..3 finished long ago, 4..5 finished recently, 6..7 running, 8..9 pending.
	for i := range 4 {
		_ = execs[i].Start()
		execs[i].Finish(completed())
	}
	clock.Advance(time.Hour)
	for i := 4; i < 6; i++ {
		_ = execs[i].Start()
		execs[i].Finish(Result{State: StateFailed})
	}
	for i := 6; i < 8; i++ {
		_ = execs[i].Start()
	}
	clock.Advance(time.Minute)
	rev := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, execs[i].ID())
		}
		return out
	}
	tests := []struct {
		name   string
		states []State
		limit  int
		within time.Duration
		want   []string
	}{
		{"all", nil, 0, 0, rev(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"limit after sort", nil, 3, 0, rev(9, 8, 7)},
		{"filter then limit", []State{StateCompleted}, 2, 0, rev(3, 2)},
		{"several states", []State{StateRunning, StateFailed}, 0, 0, rev(7, 6, 5, 4)},
		{"completed within", nil, 0, 2 * time.Minute, rev(9, 8, 7, 6, 5, 4)},
		{"completed within, terminal only", []State{StateCompleted, StateFailed}, 0, 2 * time.Minute, rev(5, 4)},
		{"nothing matches", []State{StateTimeout}, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(r.List(tt.states, tt.limit, tt.within))
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("List = %v\nwant %v", got, tt.want)
			}
		})
	}
	// ListOwned filters by owner before the limit.
	owned := r.Create(Meta{CodePreview: "a's", Owner: "token:a", SandboxID: "sb-1"})
	r.Create(Meta{CodePreview: "b's", Owner: "token:b"})
	clock.Advance(time.Second)
	if got := ids(r.ListOwned("token:a", nil, 1, 0)); len(got) != 1 || got[0] != owned.ID() {
		t.Errorf("ListOwned(token:a, limit 1) = %v, want [%s]", got, owned.ID())
	}
	if in := r.ListOwned("token:a", nil, 0, 0)[0]; in.Owner != "token:a" || in.SandboxID != "sb-1" {
		t.Errorf("owned info = %+v", in)
	}
	if got := r.ListOwned("token:c", nil, 0, 0); len(got) != 0 {
		t.Errorf("ListOwned of an owner of nothing = %v", ids(got))
	}
	if got := r.ListOwned("", nil, 0, 0); len(got) != 12 {
		t.Errorf("ListOwned(\"\") listed %d executions, want all 12", len(got))
	}
	info := r.List([]State{StatePending}, 3, 0)[2]
	if info.State != StatePending || info.CodePreview != "code" || !info.StartedAt.IsZero() || !info.FinishedAt.IsZero() {
		t.Errorf("info = %+v", info)
	}
	done := r.List([]State{StateFailed}, 1, 0)[0]
	if done.Reason != 0 || done.FinishedAt.Sub(done.CreatedAt) != time.Hour+5*time.Second {
		t.Errorf("failed info = %+v", done)
	}
}

func TestCountsAndLen(t *testing.T) {
	r := New(Config{})
	a, b, c := r.Create(Meta{}), r.Create(Meta{}), r.Create(Meta{})
	_ = b.Start()
	_ = c.Start()
	c.Finish(completed())
	_ = a
	if p, run := r.Counts(); p != 1 || run != 1 {
		t.Errorf("Counts = %d, %d; want 1, 1", p, run)
	}
	if n := r.Len(); n != 3 {
		t.Errorf("Len = %d, want 3", n)
	}
}

func TestSweep(t *testing.T) {
	type exec struct {
		out      int // stdout bytes written
		finishAt int // order of Finish; 0 = leave running
	}
	tests := []struct {
		name        string
		retentionMs int64
		budget      int64
		execs       []exec
		advance     []time.Duration // clock advance before each finish, by finish order
		after       time.Duration   // advance before Sweep
		wantLeft    []int           // indexes into execs
	}{
		{
			name: "by age", retentionMs: 60_000, budget: 1 << 20,
			execs:   []exec{{10, 1}, {10, 2}, {10, 0}},
			advance: []time.Duration{0, 30 * time.Second}, after: 31 * time.Second,
			wantLeft: []int{1, 2},
		},
		{
			name: "exactly retention is kept", retentionMs: 60_000, budget: 1 << 20,
			execs:   []exec{{10, 1}},
			advance: []time.Duration{0}, after: 60 * time.Second,
			wantLeft: []int{0},
		},
		{
			name: "within budget", retentionMs: 60_000, budget: 180,
			execs:   []exec{{60, 1}, {60, 2}, {60, 3}},
			advance: []time.Duration{0, 0, 0}, after: 0,
			wantLeft: []int{0, 1, 2},
		},
		{
			name: "running never removed", retentionMs: 1, budget: 1,
			execs:   []exec{{500, 0}, {5, 0}},
			advance: nil, after: time.Hour,
			wantLeft: []int{0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			r := New(Config{RetentionMs: tt.retentionMs, MaxBufferedBytes: tt.budget, Now: clock.Now})
			execs := make([]*Execution, len(tt.execs))
			byFinish := map[int]*Execution{}
			var wantBytes int64
			for i, x := range tt.execs {
				execs[i] = r.Create(Meta{})
				_ = execs[i].Start()
				execs[i].Write(Stdout, []byte(strings.Repeat("o", x.out)))
				wantBytes += int64(x.out)
				if x.finishAt > 0 {
					byFinish[x.finishAt] = execs[i]
				}
			}
			if got := r.BufferedBytes(); got != wantBytes {
				t.Fatalf("BufferedBytes = %d, want %d", got, wantBytes)
			}
			for k := 1; k <= len(byFinish); k++ {
				clock.Advance(tt.advance[k-1])
				byFinish[k].Finish(completed())
			}
			clock.Advance(tt.after)
			// The budget is enforced as executions end; age at Sweep.
			r.Sweep()
			if removed := len(tt.execs) - r.Len(); removed != len(tt.execs)-len(tt.wantLeft) {
				t.Errorf("removed %d, want %d", removed, len(tt.execs)-len(tt.wantLeft))
			}
			left := map[int]bool{}
			for _, i := range tt.wantLeft {
				left[i] = true
			}
			var leftBytes int64
			for i, e := range execs {
				_, err := r.Get(e.ID())
				if (err == nil) != left[i] {
					t.Errorf("exec %d: present %v, want %v", i, err == nil, left[i])
				}
				if left[i] {
					leftBytes += int64(tt.execs[i].out)
				}
			}
			if r.Len() != len(tt.wantLeft) || r.BufferedBytes() != leftBytes {
				t.Errorf("Len %d BufferedBytes %d; want %d, %d", r.Len(), r.BufferedBytes(), len(tt.wantLeft), leftBytes)
			}
		})
	}
}

// TestRetentionShares: an execution that ends with more output than the
// retention budget holds is cut down to what is left of it; the results
// and output of executions that ended before it are untouched.
func TestRetentionShares(t *testing.T) {
	r := New(Config{MaxBufferedBytes: 200})
	finish := func(out, errOut string) *Execution {
		e := r.Create(Meta{MaxOutputBytes: 1000})
		_ = e.Start()
		e.Write(Stdout, []byte(out))
		e.Write(Stderr, []byte(errOut))
		e.Finish(completed())
		return e
	}
	a := finish(strings.Repeat("a", 30), "")
	b := finish(strings.Repeat("b", 10), strings.Repeat("B", 10))
	big := finish("<"+strings.Repeat("x", 498)+">", strings.Repeat("y", 300))
	for _, e := range []*Execution{a, b, big} {
		if _, err := r.Get(e.ID()); err != nil {
			t.Fatalf("execution removed: %v", err)
		}
	}
	if got, _, _ := mustRead(t, a, Stdout, 0); got != strings.Repeat("a", 30) {
		t.Errorf("a's output changed: %q", got)
	}
	if got, _, _ := mustRead(t, b, Stderr, 0); got != strings.Repeat("B", 10) {
		t.Errorf("b's output changed: %q", got)
	}
	if res, _ := a.Result(); res.StdoutTruncated || !res.Success {
		t.Errorf("a's result changed: %+v", res)
	}
	// 150 bytes were left for big's two streams: 75 each, head and tail.
	out, next, gap := mustRead(t, big, Stdout, 0)
	if out != "<"+strings.Repeat("x", 36)+strings.Repeat("x", 37)+">" || next != 500 || !gap {
		t.Errorf("big's stdout = %q next %d gap %v", out, next, gap)
	}
	if res, _ := big.Result(); !res.StdoutTruncated || !res.StderrTruncated || res.StdoutBytes != 500 {
		t.Errorf("big's result does not say it was cut: %+v", res)
	}
	if got := r.BufferedBytes(); got != 200 {
		t.Errorf("BufferedBytes = %d, want the budget, 200", got)
	}
	// A fourth execution within what is left of an equal share keeps its
	// output; the largest streams pay.
	d := finish(strings.Repeat("d", 12), "")
	if got, _, _ := mustRead(t, d, Stdout, 0); got != strings.Repeat("d", 12) {
		t.Errorf("d's output = %q", got)
	}
	if got, _, _ := mustRead(t, a, Stdout, 0); got != strings.Repeat("a", 30) || r.BufferedBytes() > 200 {
		t.Errorf("a %q, buffered %d", got, r.BufferedBytes())
	}
	if got, _, _ := mustRead(t, big, Stderr, 0); len(got) != 69 {
		t.Errorf("big's stderr keeps %d bytes, want its share, 69", len(got))
	}
}

// TestRetentionAttachments: attachments (a test run's results) count in
// the retention budget; past it, while they keep more than half of it,
// the oldest of the account keeping the most are dropped, and the result
// says so. Before this, attachments were not counted at all: 100 test
// runs with 8 MiB of results each kept 800 MiB against a 64 MiB budget.
func TestRetentionAttachments(t *testing.T) {
	r := New(Config{MaxBufferedBytes: 1000})
	finish := func(account string, attached int, out string) *Execution {
		e := r.Create(Meta{Account: account, MaxOutputBytes: 1000})
		_ = e.Start()
		e.Write(Stdout, []byte(out))
		res := completed()
		res.Attachment = []byte(strings.Repeat("r", attached))
		e.Finish(res)
		return e
	}
	attachment := func(e *Execution) (int, bool) {
		res, _ := e.Result()
		return len(res.Attachment), res.AttachmentDropped
	}
	alice := finish("token:alice", 300, "")
	var bob []*Execution
	for range 5 {
		bob = append(bob, finish("token:bob", 300, ""))
	}
	// 1800 bytes against 1000: bob keeps the most, his oldest go until
	// the budget holds.
	if n, dropped := attachment(alice); n != 300 || dropped {
		t.Errorf("alice's attachment: %d bytes, dropped %v", n, dropped)
	}
	for i, e := range bob {
		n, dropped := attachment(e)
		if kept := i >= 3; kept != (n == 300) || kept == dropped {
			t.Errorf("bob's %d: %d bytes, dropped %v", i, n, dropped)
		}
		if res, _ := e.Result(); !res.Success {
			t.Errorf("bob's %d: dropping its attachment changed Success: %+v", i, res)
		}
	}
	if got := r.BufferedBytes(); got != 900 {
		t.Errorf("BufferedBytes = %d, want the 3 attachments kept, 900", got)
	}
	// Output past the budget takes attachments down to half of it (bob's
	// oldest, then, with equal shares, the oldest: alice's), then is cut
	// to its share of the rest: it never drops every result.
	out := finish("token:carol", 0, strings.Repeat("o", 800))
	for name, e := range map[string]*Execution{"alice's": alice, "bob's 3": bob[3]} {
		if n, dropped := attachment(e); n != 0 || !dropped {
			t.Errorf("%s attachment: %d bytes, dropped %v", name, n, dropped)
		}
	}
	if n, _ := attachment(bob[4]); n != 300 {
		t.Errorf("bob's newest attachment: %d bytes", n)
	}
	if got, _, _ := mustRead(t, out, Stdout, 0); len(got) != 700 {
		t.Errorf("carol's output keeps %d bytes, want what the attachment leaves, 700", len(got))
	}
	if got := r.BufferedBytes(); got != 1000 {
		t.Errorf("BufferedBytes = %d, want the budget, 1000", got)
	}
	// Removal gives the attachment's bytes back.
	r2 := New(Config{MaxRetained: 1})
	e := r2.Create(Meta{})
	res := completed()
	res.Attachment = []byte("results")
	e.Finish(res)
	if got := r2.BufferedBytes(); got != 7 {
		t.Errorf("BufferedBytes = %d, want the attachment's 7", got)
	}
	r2.Create(Meta{}).Finish(completed())
	if got := r2.BufferedBytes(); got != 0 {
		t.Errorf("BufferedBytes after removal = %d, want 0", got)
	}
}

// TestRetentionCount: past MaxRetained terminal executions, the ones that
// ended first are forgotten.
func TestRetentionCount(t *testing.T) {
	r := New(Config{MaxRetained: 2})
	var execs []*Execution
	for range 3 {
		e := r.Create(Meta{})
		_ = e.Start()
		e.Write(Stdout, []byte("out"))
		e.Finish(completed())
		execs = append(execs, e)
	}
	running := r.Create(Meta{})
	if _, err := r.Get(execs[0].ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the first to end is still held: %v", err)
	}
	for _, e := range append(execs[1:], running) {
		if _, err := r.Get(e.ID()); err != nil {
			t.Errorf("%v", err)
		}
	}
	if r.BufferedBytes() != 6 {
		t.Errorf("BufferedBytes = %d, want 6", r.BufferedBytes())
	}
}

// TestRetentionCountPerOwner: past MaxRetained, the account holding the
// most terminal executions loses its oldest: one principal's flood of
// results (or of executions cancelled while queued), each under a client
// key of its own, evicts its own, never another's older result.
func TestRetentionCountPerOwner(t *testing.T) {
	r := New(Config{MaxRetained: 10})
	finish := func(owner, account string) *Execution {
		e := r.Create(Meta{Owner: owner, Account: account})
		_, _ = e.Cancel() // cancelled while pending: no output at all
		return e
	}
	alice := []*Execution{finish("token:alice", "token:alice"), finish("token:alice", "token:alice")}
	var bob []*Execution
	for i := range 100 {
		bob = append(bob, finish(fmt.Sprintf("client:%016x@token:bob", i), "token:bob"))
	}
	for _, e := range alice {
		if _, err := r.Get(e.ID()); err != nil {
			t.Fatalf("alice's result after bob's 100: %v", err)
		}
	}
	for i, e := range bob {
		_, err := r.Get(e.ID())
		if kept := i >= 92; kept != (err == nil) { // bob keeps his 8 newest
			t.Errorf("bob's %d: %v", i, err)
		}
	}
	// Past the bound with equal shares, the oldest goes.
	r = New(Config{MaxRetained: 2})
	a, b := finish("token:alice", "token:alice"), finish("token:bob", "token:bob")
	finish("token:carol", "token:carol")
	if _, err := r.Get(a.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest of equal accounts is still held: %v", err)
	}
	if _, err := r.Get(b.ID()); err != nil {
		t.Error(err)
	}
}

func TestSweepKeepsRemovedExecutionReadable(t *testing.T) {
	clock := newFakeClock()
	r := New(Config{RetentionMs: 1, Now: clock.Now})
	e := r.Create(Meta{})
	e.Write(Stdout, []byte("kept"))
	e.Finish(completed())
	clock.Advance(time.Second)
	r.Sweep()
	if got, _, _ := mustRead(t, e, Stdout, 0); got != "kept" {
		t.Errorf("holder of a swept execution reads %q", got)
	}
}

func TestRunStops(t *testing.T) {
	r := New(Config{SweepIntervalMs: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = r.Run(ctx) })
	cancel()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want Canceled", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := New(Config{MaxBufferedBytes: 64})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			e := r.Create(Meta{MaxOutputBytes: 16})
			_ = e.Start()
			for range 50 {
				e.Write(Stream(i%2), []byte("0123456789"))
				_, _, _, _ = e.Read(Stream(i%2), 3)
				r.List(nil, 2, time.Minute)
				r.Sweep()
			}
			e.Finish(completed())
		})
	}
	wg.Wait()
	r.Sweep()
	if r.BufferedBytes() > 64 {
		t.Errorf("BufferedBytes %d over budget after Sweep", r.BufferedBytes())
	}
}

// TestFinishHooksOncePerExecution: both hooks see every way of ending
// (Finish, Cancel of a pending execution) exactly once, with the
// execution's meta; OnResult before the result is visible (Done not yet
// closed), OnFinish after.
func TestFinishHooksOncePerExecution(t *testing.T) {
	type call struct {
		runtime string
		state   State
		reason  Reason
		visible bool // Done was closed when the hook ran
	}
	execs := map[string]*Execution{}
	hook := func(calls *[]call) func(Meta, Result) {
		return func(m Meta, res Result) {
			visible := false
			select {
			case <-execs[m.ID].Done():
				visible = true
			default:
			}
			*calls = append(*calls, call{m.Runtime, res.State, res.Reason, visible})
		}
	}
	var finished, results []call
	r := New(Config{OnFinish: hook(&finished), OnResult: hook(&results)})
	create := func(rt string) *Execution {
		e := r.Create(Meta{Runtime: rt})
		execs[e.ID()] = e
		return e
	}
	a := create("shell")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	a.Finish(Result{State: StateCompleted, Reason: ReasonExited})
	a.Finish(Result{State: StateFailed, Reason: ReasonInternal}) // ignored: already terminal
	b := create("goja")
	if _, err := b.Cancel(); err != nil {
		t.Fatal(err)
	}
	_, _ = b.Cancel()
	create("python") // still pending: no call
	for _, tt := range []struct {
		hook    string
		calls   []call
		visible bool
	}{{"OnResult", results, false}, {"OnFinish", finished, true}} {
		want := []call{{"shell", StateCompleted, ReasonExited, tt.visible}, {"goja", StateCancelled, ReasonCancelled, tt.visible}}
		if !slices.Equal(tt.calls, want) {
			t.Errorf("%s calls = %v, want %v", tt.hook, tt.calls, want)
		}
	}
}
