package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/leakcheck"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/runtime/transformer"
	"github.com/execfarm/execfarm/supervisor/budget"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/limits"
	"github.com/execfarm/execfarm/supervisor/nodeid"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/sandbox"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

func TestMain(m *testing.M) { leakcheck.Main(m, leakcheck.IgnoreFDs(transformer.ProcessFDs)) }

var (
	alice = principal.Token("alice")
	bob   = principal.Token("bob")
)

// harness is a Manager over a fake backend and a real Runner.
type harness struct {
	m       *Manager
	backend *fakeBackend
	reg     *registry.Registry
	runner  *execution.Runner
}

// newHarness returns a Manager with cfg over a fake backend and a real
// execution Runner (4 slots, with cfg.Budget); Shutdown at cleanup, which
// then checks that every box was closed.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: 4, QueueSize: 100, Budget: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{backend: &fakeBackend{}, reg: registry.New(registry.Config{})}
	h.runner, err = execution.New(execution.Config{Sandbox: &sandbox.Config{}, Defaults: limits.Default(), Registry: h.reg, Scheduler: sched})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend, cfg.Runner = h.backend, h.runner
	if h.m, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.m.Shutdown()
		_ = h.runner.Shutdown(time.Second)
		if open := h.backend.open(); len(open) > 0 {
			t.Errorf("boxes left open after Shutdown: %v", open)
		}
	})
	return h
}

func (h *harness) create(t *testing.T, p CreateParams) *Sandbox {
	t.Helper()
	if p.Owner.IsZero() {
		p.Owner = alice
	}
	if p.Limits == (limits.Set{}) {
		p.Limits = limits.Default()
	}
	s, err := h.m.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return s
}

// run execs code in s as owner and waits for its result.
func (h *harness) run(t *testing.T, owner principal.Principal, s *Sandbox, p ExecParams) (registry.Result, string) {
	t.Helper()
	e, err := h.m.Exec(context.Background(), owner, s.ID(), p)
	if err != nil {
		t.Fatalf("Exec(%q): %v", p.Code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := e.Wait(ctx)
	if err != nil {
		t.Fatalf("exec %q did not end: %v", p.Code, err)
	}
	out, _, _, _ := e.Read(registry.Stdout, 0)
	return res, string(out)
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// events reads the whole log of s as owner.
func events(t *testing.T, m *Manager, owner principal.Principal, id string) []eventlog.Entry[*Event] {
	t.Helper()
	var out []eventlog.Entry[*Event]
	for from := int64(0); ; {
		p, err := m.ReadEvents(owner, id, from, MaxPageEvents)
		if err != nil {
			t.Fatalf("ReadEvents(%d): %v", from, err)
		}
		out = append(out, p.Events...)
		if len(p.Events) == 0 {
			return out
		}
		from = p.Next
	}
}

// kinds renders events as their kinds, in order.
func kinds(es []eventlog.Entry[*Event]) string {
	names := map[EventKind]string{EventReady: "ready", EventExecStarted: "started", EventExecOutput: "output",
		EventExecEnded: "ended", EventFileWritten: "written", EventFileRemoved: "removed", EventDirectoryMade: "mkdir",
		EventExpiring: "expiring", EventEnded: "END"}
	var b []string
	for _, e := range es {
		b = append(b, names[e.Value.Kind])
	}
	return strings.Join(b, " ")
}

// TestFileWrittenByOneExecIsReadByTheNext: the sandbox persists between
// execs (and uploads): what one exec writes, the next reads; a relative
// workdir is resolved from /workspace.
func TestFileWrittenByOneExecIsReadByTheNext(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	if res, _ := h.run(t, alice, s, ExecParams{Code: "write note.txt hello there"}); res.State != registry.StateCompleted {
		t.Fatalf("write: %+v", res)
	}
	res, out := h.run(t, alice, s, ExecParams{Code: "cat note.txt"})
	if res.State != registry.StateCompleted || out != "hello there" {
		t.Fatalf("cat: %+v %q", res, out)
	}
	if _, _, err := h.m.Upload(context.Background(), alice, s.ID(), "sub/dir/up.txt", 0, strings.NewReader("uploaded")); err != nil {
		t.Fatal(err)
	}
	if _, out := h.run(t, alice, s, ExecParams{Code: "cat up.txt", Workdir: "sub/dir"}); out != "uploaded" {
		t.Fatalf("cat of the upload from workdir sub/dir: %q", out)
	}
	// A workdir that is no directory is the caller's mistake, before the
	// exec exists (it failed INTERNAL at the program's start).
	for wd, want := range map[string]string{"nope/x": "/workspace/nope/x does not exist", "sub/dir/up.txt": "is not a directory"} {
		_, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "pwd", Workdir: wd})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "workdir" || !strings.Contains(fe.Reason, want) {
			t.Errorf("workdir %s: %v; want a FieldError of workdir saying %q", wd, err, want)
		}
	}
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "echo x"})
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Meta(); m.Owner != "token:alice" || m.SandboxID != s.ID() || m.Runtime != "shell" {
		t.Fatalf("exec meta %+v", m)
	}
}

// TestOwnership: to another principal a sandbox does not exist, in every
// call: status, list, exec, files, events, delete, and its execs' stdin
// and signals.
func TestOwnership(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{Labels: map[string]string{"team": "a"}})
	ctx := context.Background()
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block", StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotFound) && !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("bob's %s: %v, want not found", what, err)
		}
	}
	_, err = h.m.Get(bob, s.ID())
	notFound("Get", err)
	if l := h.m.List(bob, nil); len(l) != 0 {
		t.Errorf("bob lists %d sandboxes", len(l))
	}
	_, err = h.m.Exec(context.Background(), bob, s.ID(), ExecParams{Code: "echo hi"})
	notFound("Exec", err)
	_, _, err = h.m.Upload(ctx, bob, s.ID(), "x", 0, strings.NewReader("x"))
	notFound("Upload", err)
	notFound("Download", h.m.Download(ctx, bob, s.ID(), "x", func(FileInfo, io.Reader) error { return nil }))
	_, _, _, err = h.m.ListFiles(ctx, bob, s.ID(), "/", 0)
	notFound("ListFiles", err)
	_, _, err = h.m.Stat(ctx, bob, s.ID(), "/")
	notFound("Stat", err)
	notFound("Remove", h.m.Remove(ctx, bob, s.ID(), "x", false))
	notFound("Mkdir", h.m.Mkdir(ctx, bob, s.ID(), "d", 0, false))
	_, err = h.m.ReadEvents(bob, s.ID(), 0, 0)
	notFound("ReadEvents", err)
	_, err = h.m.Subscribe(ctx, bob, s.ID(), 0)
	notFound("Subscribe", err)
	notFound("WriteStdin", h.m.WriteStdin(ctx, bob, e.ID(), []byte("x"), false))
	notFound("Signal", h.m.Signal(bob, e.ID(), syscall.SIGINT))
	_, err = h.m.Delete(bob, s.ID())
	notFound("Delete", err)
	// Still alice's, untouched.
	if l := h.m.List(alice, map[string]string{"team": "a"}); len(l) != 1 || l[0].ID() != s.ID() {
		t.Fatalf("alice's list: %v", l)
	}
	if e.State().Terminal() {
		t.Fatalf("bob's calls ended alice's exec: %v", e.State())
	}
}

// TestPrincipalOverseesItsClients: a principal itself (no client) lists,
// reads and deletes the sandboxes of its clients (an MCP bridge's, whose
// random client key died with it), marked with their owner; it still
// cannot use them (execs, files, events stay the owner's). Another client
// of it, the principal's own clients towards its sandboxes, and another
// principal or its client, are told "not found" exactly as for an
// unknown id, and list nothing of them.
func TestPrincipalOverseesItsClients(t *testing.T) {
	h := newHarness(t, Config{})
	client := func(p principal.Principal, key string) principal.Principal {
		c, err := p.WithClient(strings.Repeat(key, principal.MinClientKeyLength))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2, bobs := client(alice, "1"), client(alice, "2"), client(bob, "1")
	s1 := h.create(t, CreateParams{Owner: c1})
	own := h.create(t, CreateParams{Owner: alice})
	ctx := context.Background()

	// An id this run could have made, but did not: the message every
	// refusal must match.
	never := h.m.cfg.IDs.New()
	_, unknown := h.m.Get(bob, never)
	notFound := func(who, what, id string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotFound) || err.Error() != strings.ReplaceAll(unknown.Error(), never, id) {
			t.Errorf("%s's %s of %s: %v, want %q", who, what, id, err, strings.ReplaceAll(unknown.Error(), never, id))
		}
	}
	for _, c := range []struct {
		who    string
		caller principal.Principal
		id     string
	}{{"c2", c2, s1.ID()}, {"bob", bob, s1.ID()}, {"bob's client", bobs, s1.ID()}, {"c1", c1, own.ID()}, {"c2", c2, own.ID()}} {
		_, err := h.m.Oversee(c.caller, c.id)
		notFound(c.who, "Oversee", c.id, err)
		_, err = h.m.Delete(c.caller, c.id)
		notFound(c.who, "Delete", c.id, err)
		for _, sb := range h.m.List(c.caller, nil) {
			if sb.ID() == c.id {
				t.Errorf("%s lists %s (owner %s)", c.who, sb.ID(), sb.Info().Owner)
			}
		}
	}
	// c1 sees its own alone.
	if l := h.m.List(c1, nil); len(l) != 1 || l[0].ID() != s1.ID() {
		t.Errorf("c1's list: %v", l)
	}
	// alice lists both, c1's marked as c1's.
	l := h.m.List(alice, nil)
	owners := map[string]string{}
	for _, sb := range l {
		owners[sb.ID()] = sb.Info().Owner
	}
	if len(l) != 2 || owners[s1.ID()] != c1.String() || owners[own.ID()] != alice.String() {
		t.Errorf("alice's list: %v, want her own and c1's (%s)", owners, c1)
	}
	if sb, err := h.m.Oversee(alice, s1.ID()); err != nil || sb != s1 {
		t.Errorf("alice's Oversee of c1's: %v, %v", sb, err)
	}
	// Using it stays c1's.
	_, err := h.m.Exec(ctx, alice, s1.ID(), ExecParams{Code: "echo hi"})
	notFound("alice", "Exec", s1.ID(), err)
	_, _, _, err = h.m.ListFiles(ctx, alice, s1.ID(), "/", 0)
	notFound("alice", "ListFiles", s1.ID(), err)
	_, err = h.m.ReadEvents(alice, s1.ID(), 0, 0)
	notFound("alice", "ReadEvents", s1.ID(), err)
	// alice deletes it; her own is untouched.
	if _, err := h.m.Delete(alice, s1.ID()); err != nil {
		t.Fatalf("alice's Delete of c1's: %v", err)
	}
	if l := h.m.List(alice, nil); len(l) != 1 || l[0].ID() != own.ID() {
		t.Errorf("alice's list after the delete: %v", l)
	}
	if _, err := h.m.Get(c1, s1.ID()); !errors.As(err, new(*EndedError)) {
		t.Errorf("c1's Get after alice's delete: %v, want ended", err)
	}
}

// TestQuotas: the server's limit, the principal's limit and the lifetime
// ceiling refuse a create with a *QuotaError naming the limit and its flag;
// a deleted sandbox frees its place.
func TestQuotas(t *testing.T) {
	h := newHarness(t, Config{MaxSandboxes: 5, MaxPerPrincipal: 3, MaxLifetime: time.Hour})
	var alices []*Sandbox
	for range 3 {
		alices = append(alices, h.create(t, CreateParams{Owner: alice}))
	}
	var q *QuotaError
	_, err := h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: limits.Default()})
	if !errors.As(err, &q) || q.Flag != "--max-sandboxes-per-principal" || !strings.Contains(err.Error(), "of 3") {
		t.Fatalf("alice's 4th: %v", err)
	}
	h.create(t, CreateParams{Owner: bob})
	h.create(t, CreateParams{Owner: bob})
	_, err = h.m.Create(context.Background(), CreateParams{Owner: principal.Local(), Limits: limits.Default()})
	if !errors.As(err, &q) || q.Flag != "--max-sandboxes" || q.Max != 5 {
		t.Fatalf("6th: %v", err)
	}
	if _, err := h.m.Delete(alice, alices[0].ID()); err != nil {
		t.Fatal(err)
	}
	h.create(t, CreateParams{Owner: principal.Local()})
	for _, tt := range []struct {
		name string
		d    time.Duration
	}{{"over the ceiling", 2 * time.Hour}, {"no expiry under a ceiling", 0}} {
		_, err = h.m.Create(context.Background(), CreateParams{Owner: bob, Limits: limits.Default(), Lifetime: durationPtr(tt.d)})
		if !errors.As(err, &q) || q.Flag != "--sandbox-max-lifetime" {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	var fe *FieldError
	if _, err := h.m.Create(context.Background(), CreateParams{Owner: bob, Limits: limits.Default(), Lifetime: durationPtr(-time.Second)}); !errors.As(err, &fe) {
		t.Errorf("negative lifetime: %v", err)
	}
	if _, err := h.m.Create(context.Background(), CreateParams{Owner: bob, Limits: limits.Default(), Labels: map[string]string{"bad key": "v"}}); !errors.As(err, &fe) || fe.Field != "labels" {
		t.Errorf("bad label: %v", err)
	}
}

// TestMemoryBudget: a sandbox holds its memory limit of the node's
// budget from its create to its end; a create that does not fit is
// refused naming the budget and what is held, one whose start fails holds
// nothing, and an exec in a sandbox takes nothing more (the budget is full
// of sandboxes here, and the exec runs).
func TestMemoryBudget(t *testing.T) {
	const mem = 512 << 20
	b, err := budget.New(2 * mem)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Budget: b})
	lim := limits.Default()
	lim.MemoryBytes = mem
	first := h.create(t, CreateParams{Limits: lim})
	h.create(t, CreateParams{Limits: lim})
	_, err = h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: lim})
	var be *budget.Error
	if !errors.As(err, &be) || !errors.Is(err, budget.ErrExhausted) || be.Held != 2*mem || !strings.Contains(err.Error(), "--memory-budget") {
		t.Fatalf("3rd create over the budget: %v", err)
	}
	if res, out := h.run(t, alice, first, ExecParams{Code: "echo hi"}); res.State != registry.StateCompleted || out != "hi\n" {
		t.Fatalf("exec in a sandbox with the budget full: %v %q", res.State, out)
	}
	if _, err := h.m.Delete(alice, first.ID()); err != nil {
		t.Fatal(err)
	}
	if held, _ := b.Usage(); held != mem {
		t.Fatalf("held %d after a delete, want %d", held, mem)
	}
	h.backend.mu.Lock()
	h.backend.startErr = errors.New("no start")
	h.backend.mu.Unlock()
	if _, err := h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: lim}); err == nil {
		t.Fatal("create with a failing start succeeded")
	}
	if held, _ := b.Usage(); held != mem {
		t.Fatalf("held %d after a failed start, want %d", held, mem)
	}
	h.backend.mu.Lock()
	h.backend.startErr = nil
	h.backend.mu.Unlock()
	h.create(t, CreateParams{Limits: lim})
	h.m.Shutdown()
	if held, _ := b.Usage(); held != 0 {
		t.Fatalf("held %d after Shutdown, want 0", held)
	}
}

// TestNoExpiryWithoutACeiling: a server without a lifetime ceiling lets
// a sandbox live without expiry; its default lifetime still applies when
// a create names none.
func TestNoExpiryWithoutACeiling(t *testing.T) {
	h := newHarness(t, Config{MaxLifetime: NoLifetimeCeiling})
	s := h.create(t, CreateParams{Lifetime: durationPtr(0)})
	if in := s.Info(); !in.Expires.IsZero() {
		t.Fatalf("expires %v, want never", in.Expires)
	}
	d := h.create(t, CreateParams{})
	if in := d.Info(); in.Expires.Sub(in.Created) != DefaultLifetime {
		t.Fatalf("default lifetime %v", in.Expires.Sub(in.Created))
	}
}

// TestEventsHistoryThenLive: a subscriber from offset 0, after three
// execs, receives all their events in order, then the next exec's live;
// offsets increase by one without gaps; each exec's events are started,
// output, ended.
func TestEventsHistoryThenLive(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	for i := range 3 {
		h.run(t, alice, s, ExecParams{Code: fmt.Sprintf("echo %d", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq, err := h.m.Subscribe(ctx, alice, s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan eventlog.Entry[*Event], 100)
	done := make(chan error, 1)
	go func() {
		for e, err := range seq {
			if err != nil {
				done <- err
				return
			}
			got <- e
		}
		done <- nil
	}()
	var seen []eventlog.Entry[*Event]
	take := func(n int) {
		for range n {
			select {
			case e := <-got:
				seen = append(seen, e)
			case err := <-done:
				// The last events and the end can be ready at once, and
				// select picks either: events first.
				select {
				case e := <-got:
					seen = append(seen, e)
					done <- err
					continue
				default:
				}
				t.Fatalf("subscription ended early: %v (after %s)", err, kinds(seen))
			case <-time.After(10 * time.Second):
				t.Fatalf("no event after %d", len(seen))
			}
		}
	}
	take(1 + 3*3) // ready, then started/output/ended of each exec
	res, _ := h.run(t, alice, s, ExecParams{Code: "echo live"})
	take(3)
	if res.State != registry.StateCompleted {
		t.Fatal(res)
	}
	if k := kinds(seen); k != "ready started output ended started output ended started output ended started output ended" {
		t.Fatalf("kinds: %s", k)
	}
	for i, e := range seen {
		if e.Offset != int64(i) {
			t.Fatalf("event %d at offset %d", i, e.Offset)
		}
	}
	if last := seen[len(seen)-2].Value; string(last.Data) != "live\n" || last.StreamOffset != 0 {
		t.Fatalf("live output event %+v", last)
	}
	if end := seen[len(seen)-1].Value; end.Result.State != registry.StateCompleted || end.ExecutionID != seen[len(seen)-3].Value.ExecutionID {
		t.Fatalf("live end event %+v", end)
	}
	// Deleting ends the subscription after the last event.
	if _, err := h.m.Delete(alice, s.ID()); err != nil {
		t.Fatal(err)
	}
	take(1)
	if err := <-done; err != nil {
		t.Fatalf("subscription ended with %v, want nil after the end", err)
	}
	if e := seen[len(seen)-1].Value; e.Kind != EventEnded || e.Reason != EndDeleted {
		t.Fatalf("last event %+v", e)
	}
}

// TestExpiry: a sandbox with a lifetime ends on its own: its running exec
// ends CANCELLED, its box is closed, it is no longer found, and its log
// (still readable) ends with expiring and then ended, reason expired.
func TestExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{Lifetime: durationPtr(200 * time.Millisecond)})
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox did not expire")
	}
	if _, err := h.m.Get(alice, s.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after expiry: %v", err)
	}
	if res, _ := e.Result(); res.State != registry.StateCancelled || res.Error != "Execution was cancelled: the sandbox expired: its lifetime passed" {
		t.Fatalf("exec result %+v, want CANCELLED saying the sandbox expired", res)
	}
	if open := h.backend.open(); len(open) != 0 {
		t.Fatalf("boxes open after expiry: %v", open)
	}
	es := events(t, h.m, alice, s.ID())
	if k := kinds(es); !strings.HasSuffix(k, "expiring ended END") {
		t.Fatalf("events: %s", k)
	}
	end := es[len(es)-1].Value
	if end.Reason != EndExpired || end.CancelledExecs != 1 || es[len(es)-3].Value.Reason != EndExpired {
		t.Fatalf("end event %+v", end)
	}
}

// TestWorkerLostEndsTheSandbox: a sandbox whose worker exits on its own
// (the OOM killer chose it) ends at once, reason failed: its running exec
// ends CANCELLED, its box is closed and its place is free for another
// sandbox (MaxPerPrincipal 1), instead of holding them until its lifetime.
func TestWorkerLostEndsTheSandbox(t *testing.T) {
	h := newHarness(t, Config{MaxPerPrincipal: 1, MaxLifetime: time.Hour})
	s := h.create(t, CreateParams{Lifetime: durationPtr(time.Hour)})
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
	if err != nil {
		t.Fatal(err)
	}
	h.backend.mu.Lock()
	box := h.backend.boxes[len(h.backend.boxes)-1]
	h.backend.mu.Unlock()
	// The exec runs in the box (a pending one would find the worker gone
	// at its start and fail internal).
	if !waitFor(5*time.Second, func() bool { box.mu.Lock(); defer box.mu.Unlock(); return len(box.running) == 1 }) {
		t.Fatal("the exec did not start")
	}
	box.loseWorker()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox whose worker exited did not end")
	}
	if res, _ := e.Result(); res.State != registry.StateCancelled {
		t.Fatalf("exec result %+v, want CANCELLED", res)
	}
	if open := h.backend.open(); len(open) != 0 {
		t.Fatalf("boxes open after the worker was lost: %v", open)
	}
	es := events(t, h.m, alice, s.ID())
	end := es[len(es)-1].Value
	if end.Kind != EventEnded || end.Reason != EndFailed || !strings.Contains(end.Message, "worker exited") {
		t.Fatalf("end event %+v", end)
	}
	// Its owner is told that it ended and why, not that it was never
	// made; another principal learns nothing of it.
	_, err = h.m.Get(alice, s.ID())
	if !errors.Is(err, ErrNotFound) || !strings.Contains(fmt.Sprint(err), "ended at") ||
		!strings.Contains(fmt.Sprint(err), "failed: its worker exited") || !strings.Contains(fmt.Sprint(err), "event log") {
		t.Errorf("Get of the sandbox that ended = %v, want ErrNotFound saying it ended, why, and that its log is readable", err)
	}
	if _, err := h.m.Get(bob, s.ID()); !errors.Is(err, ErrNotFound) || strings.Contains(fmt.Sprint(err), "ended") {
		t.Errorf("Get of another principal's ended sandbox = %v, want ErrNotFound saying nothing of it", err)
	}
	h.create(t, CreateParams{}) // the principal's only place is free again
}

// TestIdleTimeout: a running exec holds the idle timeout off; once
// nothing runs, the sandbox ends after the idle timeout, reason idle.
func TestIdleTimeout(t *testing.T) {
	var mu sync.Mutex
	var skew time.Duration // the clock runs ahead of real time by this
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	h := newHarness(t, Config{Now: clock})
	s := h.create(t, CreateParams{IdleTimeout: 100 * time.Millisecond})
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
	if err != nil {
		t.Fatal(err)
	}
	// An hour later, with the exec still running, the idle timer firing
	// (as it would, were it armed) ends nothing.
	mu.Lock()
	skew = time.Hour
	mu.Unlock()
	h.m.expire(s, EndIdle)
	if _, err := h.m.Get(alice, s.ID()); err != nil {
		t.Fatalf("the sandbox idled out with an exec running: %v", err)
	}
	if _, err := e.Cancel(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox did not idle out")
	}
	es := events(t, h.m, alice, s.ID())
	if end := es[len(es)-1].Value; end.Reason != EndIdle || end.CancelledExecs != 0 {
		t.Fatalf("end %+v", end)
	}
}

// TestDeleteCancelsExecs: deleting a sandbox cancels its running and
// queued execs (CANCELLED), each logged as ended before the sandbox's
// end, and frees everything.
func TestDeleteCancelsExecs(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	var execs []*registry.Execution
	for range 6 { // 4 slots: 4 run, 2 wait in the queue
		e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
		if err != nil {
			t.Fatal(err)
		}
		execs = append(execs, e)
	}
	n, err := h.m.Delete(alice, s.ID())
	if err != nil || n != 6 {
		t.Fatalf("Delete = %d, %v; want 6 cancelled", n, err)
	}
	for _, e := range execs {
		if res, ok := e.Result(); !ok || res.State != registry.StateCancelled || res.Error != "Execution was cancelled: the sandbox was deleted" {
			t.Fatalf("exec %s: %+v; want CANCELLED saying the sandbox was deleted", e.ID(), res)
		}
	}
	// The reason is said once: "(deleted: by its owner)", not "(deleted: deleted)".
	if _, err := h.m.Delete(alice, s.ID()); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "(deleted: by its owner)") {
		t.Fatalf("second Delete: %v", err)
	}
	es := events(t, h.m, alice, s.ID())
	k := kinds(es)
	if strings.Count(k, "started") != 6 || strings.Count(k, "ended") != 6 || !strings.HasSuffix(k, "ended END") {
		t.Fatalf("events: %s", k)
	}
	if open := h.backend.open(); len(open) != 0 {
		t.Fatalf("boxes open: %v", open)
	}
	if _, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "echo"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Exec after delete: %v", err)
	}
}

// TestExecReachingAnEndingSandboxIsCancelled: an exec whose run reaches
// the sandbox (Acquire) after the sandbox began ending, before the end's
// cancel reached the exec, ends CANCELLED with the end's cause, like the
// execs the end cancelled itself. A queued exec does so when another's
// cancel frees its slot first (TestDeleteCancelsExecs failed in CI so:
// the end's loop had not reached it). Here the end is held after its
// first step: the sandbox ending, its cause set.
func TestExecReachingAnEndingSandboxIsCancelled(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	var running []*registry.Execution
	for range 4 { // the harness's 4 slots
		e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, e)
	}
	queued, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	box := h.backend.boxes[0]
	if !waitFor(5*time.Second, func() bool { box.mu.Lock(); defer box.mu.Unlock(); return len(box.running) == 4 }) {
		t.Fatal("the 4 blocking execs did not start")
	}
	s.mu.Lock()
	s.state, s.cancelCause = stateEnding, cancelCause(EndDeleted, "by its owner")
	s.mu.Unlock()
	if _, err := running[0].Cancel(); err != nil { // frees a slot for queued
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := queued.Wait(ctx)
	s.mu.Lock()
	s.state, s.cancelCause, s.cancelled = stateReady, "", 0 // the harness ends the sandbox
	s.mu.Unlock()
	if err != nil {
		t.Fatalf("the queued exec did not end: %v", err)
	}
	if res.State != registry.StateCancelled || res.Error != "Execution was cancelled: the sandbox was deleted" {
		t.Fatalf("queued exec reaching an ending sandbox: %+v; want CANCELLED saying the sandbox was deleted", res)
	}
}

// TestDefaultPerPrincipal: with no MaxPerPrincipal one principal holds a
// quarter of MaxSandboxes (at least one), so that others still find room:
// with 8, alice's third create is refused naming the flag and bob's two
// succeed; with 2, each principal holds one.
func TestDefaultPerPrincipal(t *testing.T) {
	for _, tt := range []struct{ total, each int }{{8, 2}, {2, 1}, {DefaultMaxSandboxes, 4}} {
		t.Run(fmt.Sprint(tt.total), func(t *testing.T) {
			h := newHarness(t, Config{MaxSandboxes: tt.total})
			if _, perPrincipal, _, _ := h.m.Limits(); perPrincipal != tt.each {
				t.Fatalf("Limits' per principal %d, want %d", perPrincipal, tt.each)
			}
			for range tt.each {
				h.create(t, CreateParams{Owner: alice})
			}
			var q *QuotaError
			_, err := h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: limits.Default()})
			if !errors.As(err, &q) || q.Flag != "--max-sandboxes-per-principal" || q.Max != int64(tt.each) {
				t.Fatalf("alice's create past %d: %v", tt.each, err)
			}
			for range tt.each {
				h.create(t, CreateParams{Owner: bob})
			}
		})
	}
}

// TestMaxExecs: a sandbox holds at most MaxExecs execs at once; the next
// is refused with a *QuotaError until one ends.
func TestMaxExecs(t *testing.T) {
	h := newHarness(t, Config{MaxExecs: 2})
	s := h.create(t, CreateParams{})
	a, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"}); err != nil {
		t.Fatal(err)
	}
	var q *QuotaError
	if _, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "echo"}); !errors.As(err, &q) || q.Max != 2 {
		t.Fatalf("third exec: %v", err)
	}
	if _, err := a.Cancel(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool { return s.Info().Execs == 1 }) {
		t.Fatal("the cancelled exec still holds its place")
	}
	if res, _ := h.run(t, alice, s, ExecParams{Code: "echo ok"}); res.State != registry.StateCompleted {
		t.Fatal(res)
	}
}

// TestStdinAndSignals: an exec started with its standard input open reads
// what WriteStdin gives it until the close; a write to an exec without
// open input, or after the close, is refused; a signal reaches a running
// exec through the mechanism.
func TestStdinAndSignals(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	ctx := context.Background()
	e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "stdin", Stdin: []byte("first "), StdinOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	// Written before or after the program starts, in order.
	for _, part := range []string{"second ", "third"} {
		if err := h.m.WriteStdin(ctx, alice, e.ID(), []byte(part), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.m.WriteStdin(ctx, alice, e.ID(), nil, true); err != nil {
		t.Fatal(err)
	}
	if err := h.m.WriteStdin(ctx, alice, e.ID(), []byte("late"), false); !errors.Is(err, ErrStdinClosed) && !errors.Is(err, ErrExecNotRunning) && !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("write after close: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if res, err := e.Wait(wctx); err != nil || res.State != registry.StateCompleted {
		t.Fatalf("stdin exec: %+v %v", res, err)
	}
	// The box's fake "stdin" program echoes its input; the first bytes
	// came with the request (req.Stdin), which the fake does not read.
	out, _, _, _ := e.Read(registry.Stdout, 0)
	if string(out) != "second third" {
		t.Fatalf("output %q", out)
	}
	closed, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Code: "block"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.m.WriteStdin(ctx, alice, closed.ID(), []byte("x"), false); !errors.Is(err, ErrStdinClosed) {
		t.Fatalf("write to an exec without open input: %v", err)
	}
	if !waitFor(5*time.Second, func() bool { return h.m.Signal(alice, closed.ID(), syscall.SIGINT) == nil }) {
		t.Fatal("the signal never reached the running exec")
	}
	box := h.backend.boxes[0]
	box.mu.Lock()
	sig := strings.Join(box.signals, ",")
	box.mu.Unlock()
	if sig != closed.ID()+" interrupt" {
		t.Fatalf("signals %q", sig)
	}
	if _, err := closed.Cancel(); err != nil {
		t.Fatal(err)
	}
}

// TestFiles: uploads, downloads, listings, stats, removals and mkdirs go
// to the mechanism with resolved paths and log their events; a file over
// the workspace's room is the mechanism's ENOSPC; a missing path is
// exists false.
func TestFiles(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{Limits: func() limits.Set { l := limits.Default(); l.WorkspaceBytes = 1 << 20; return l }()})
	ctx := context.Background()
	abs, n, err := h.m.Upload(ctx, alice, s.ID(), "a/b.bin", 0, bytes.NewReader(make([]byte, 1000)))
	if err != nil || abs != "/workspace/a/b.bin" || n != 1000 {
		t.Fatalf("Upload = %q, %d, %v", abs, n, err)
	}
	if _, _, err := h.m.Upload(ctx, alice, s.ID(), "big", 0, bytes.NewReader(make([]byte, 2<<20))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("upload over the room: %v", err)
	}
	var got bytes.Buffer
	if err := h.m.Download(ctx, alice, s.ID(), "/workspace/a/../a/b.bin", func(fi FileInfo, r io.Reader) error {
		if fi.Size != 1000 {
			t.Errorf("info %+v", fi)
		}
		_, err := io.Copy(&got, r)
		return err
	}); err != nil || got.Len() != 1000 {
		t.Fatalf("Download: %d bytes, %v", got.Len(), err)
	}
	if err := h.m.Download(ctx, alice, s.ID(), "nope", func(FileInfo, io.Reader) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("download of a missing file: %v", err)
	}
	if err := h.m.Mkdir(ctx, alice, s.ID(), "d", 0, false); err != nil {
		t.Fatal(err)
	}
	dir, entries, total, err := h.m.ListFiles(ctx, alice, s.ID(), ".", 1)
	if err != nil || dir != "/workspace" || total != 2 || len(entries) != 1 || entries[0].Name != "a" {
		t.Fatalf("ListFiles = %q %v %d %v", dir, entries, total, err)
	}
	var fe *FieldError
	if _, _, _, err := h.m.ListFiles(ctx, alice, s.ID(), ".", MaxEntries+1); !errors.As(err, &fe) || fe.Field != "max_entries" {
		t.Fatalf("max_entries over the bound: %v", err)
	}
	if _, ok, err := h.m.Stat(ctx, alice, s.ID(), "missing"); err != nil || ok {
		t.Fatalf("Stat(missing) = %v, %v; want false, nil", ok, err)
	}
	if err := h.m.Remove(ctx, alice, s.ID(), "a/b.bin", false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/workspace", "."} {
		if err := h.m.Remove(ctx, alice, s.ID(), p, true); !errors.As(err, &fe) {
			t.Errorf("Remove(%q): %v", p, err)
		}
	}
	if _, _, err := h.m.Upload(ctx, alice, s.ID(), "../../etc/passwd", 0, strings.NewReader("x")); !errors.As(err, &fe) || fe.Field != "path" {
		t.Fatalf("upload climbing above the root: %v", err)
	}
	if k := kinds(events(t, h.m, alice, s.ID())); k != "ready written mkdir removed" {
		t.Fatalf("events %s", k)
	}
}

// TestEndedLogRetained: an ended sandbox's log stays readable, for its
// owner only, until the retention passes.
func TestEndedLogRetained(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, Config{Now: clock, EndedRetention: time.Minute})
	s := h.create(t, CreateParams{})
	if _, err := h.m.Delete(alice, s.ID()); err != nil {
		t.Fatal(err)
	}
	p, err := h.m.ReadEvents(alice, s.ID(), 0, 0)
	if err != nil || !p.Ended || kinds(p.Events) != "ready END" {
		t.Fatalf("ReadEvents after delete = %+v, %v", p, err)
	}
	if _, err := h.m.ReadEvents(bob, s.ID(), 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob reads alice's ended log: %v", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if _, err := h.m.ReadEvents(alice, s.ID(), 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadEvents after the retention: %v", err)
	}
}

// TestEndedLogsPerPrincipal: past MaxSandboxes ended logs, the principal
// holding the most loses its oldest: bob creating and deleting sandboxes
// in a loop does not drop alice's log before its retention.
func TestEndedLogsPerPrincipal(t *testing.T) {
	h := newHarness(t, Config{MaxSandboxes: 3, EndedRetention: time.Hour})
	a := h.create(t, CreateParams{})
	if _, err := h.m.Delete(alice, a.ID()); err != nil {
		t.Fatal(err)
	}
	var bobs []string
	for range 6 {
		b := h.create(t, CreateParams{Owner: bob})
		if _, err := h.m.Delete(bob, b.ID()); err != nil {
			t.Fatal(err)
		}
		bobs = append(bobs, b.ID())
	}
	if p, err := h.m.ReadEvents(alice, a.ID(), 0, 0); err != nil || !p.Ended {
		t.Fatalf("alice's ended log after bob's 6: %+v, %v", p, err)
	}
	for i, id := range bobs {
		_, err := h.m.ReadEvents(bob, id, 0, 0)
		if kept := i >= 4; kept != (err == nil) { // bob keeps his 2 newest
			t.Errorf("bob's %d: %v", i, err)
		}
	}
}

// TestEventLogBound: a sandbox's log keeps its bound; reading from 0 (the
// start) reads from the first event held and says which it is; reading
// another pruned offset fails, saying which is the first held.
func TestEventLogBound(t *testing.T) {
	h := newHarness(t, Config{Events: eventlog.Config{MaxEntries: 8}})
	s := h.create(t, CreateParams{})
	for i := range 4 {
		h.run(t, alice, s, ExecParams{Code: fmt.Sprintf("echo %d", i)})
	}
	var de *eventlog.DroppedError
	if _, err := h.m.ReadEvents(alice, s.ID(), 3, 0); !errors.As(err, &de) || de.First != 5 {
		t.Fatalf("ReadEvents(3): %v, want DroppedError with first 5", err)
	}
	for _, from := range []int64{0, 5} {
		p, err := h.m.ReadEvents(alice, s.ID(), from, 0)
		if err != nil || len(p.Events) != 8 || p.Events[0].Offset != 5 || p.First != 5 || p.Next != 13 || p.Ended {
			t.Fatalf("ReadEvents(%d): page %+v, %v; want 8 events from 5, first 5, next 13", from, p, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq, err := h.m.Subscribe(ctx, alice, s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range seq {
		if err != nil || e.Offset != 5 {
			t.Fatalf("Subscribe(0): first event %d, %v; want offset 5", e.Offset, err)
		}
		break
	}
}

// TestShutdownEndsEverySandbox: Shutdown ends every sandbox (reason
// shutdown) and refuses new ones.
func TestShutdownEndsEverySandbox(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.create(t, CreateParams{Owner: alice})
	b := h.create(t, CreateParams{Owner: bob})
	if _, err := h.m.Exec(context.Background(), bob, b.ID(), ExecParams{Code: "block"}); err != nil {
		t.Fatal(err)
	}
	h.m.Shutdown()
	for _, s := range []*Sandbox{a, b} {
		es := events(t, h.m, principal.Principal{Kind: principal.KindToken, Name: strings.TrimPrefix(s.owner, "token:")}, s.ID())
		if end := es[len(es)-1].Value; end.Kind != EventEnded || end.Reason != EndShutdown {
			t.Fatalf("%s ended with %+v", s.ID(), end)
		}
	}
	if _, err := h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: limits.Default()}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Create after Shutdown: %v", err)
	}
}

// TestConcurrentSandboxes: many sandboxes of two principals, each running
// execs and file transfers at once (under -race), lose nothing; after
// deleting them nothing is left.
func TestConcurrentSandboxes(t *testing.T) {
	h := newHarness(t, Config{MaxSandboxes: 20, MaxPerPrincipal: 10})
	var wg sync.WaitGroup
	errs := make(chan error, 20*10)
	for i := range 20 {
		owner := alice
		if i%2 == 1 {
			owner = bob
		}
		wg.Go(func() {
			s, err := h.m.Create(context.Background(), CreateParams{Owner: owner, Limits: limits.Default()})
			if err != nil {
				errs <- err
				return
			}
			for j := range 10 {
				name := fmt.Sprintf("f%d", j)
				if _, _, err := h.m.Upload(context.Background(), owner, s.ID(), name, 0, strings.NewReader(name)); err != nil {
					errs <- err
					continue
				}
				e, err := h.m.Exec(context.Background(), owner, s.ID(), ExecParams{Code: "cat " + name})
				if err != nil {
					errs <- err
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := e.Wait(ctx)
				cancel()
				out, _, _, _ := e.Read(registry.Stdout, 0)
				if err != nil || res.State != registry.StateCompleted || string(out) != name {
					errs <- fmt.Errorf("sandbox %d exec %d: %+v %v %q", i, j, res, err, out)
				}
			}
			if _, err := h.m.Delete(owner, s.ID()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := h.m.Live(); n != 0 {
		t.Fatalf("%d sandboxes live", n)
	}
	if open := h.backend.open(); len(open) != 0 {
		t.Fatalf("boxes open: %v", open)
	}
}

func TestResolvePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{".", "/workspace"},
		{"a/b", "/workspace/a/b"},
		{"/etc/passwd", "/etc/passwd"},
		{"a/../../tmp/x", "/tmp/x"},
		{"..", "/"},
		{"../..", ""},
		{"//workspace//./x/", "/workspace/x"},
		{"/a/b/../../..", ""},
		{"../../..", ""},
		{"/..", ""},
		{"", ""},
		{"a\x00b", ""},
		{strings.Repeat("a", MaxPathBytes+1), ""},
	}
	for _, tt := range tests {
		got, err := ResolvePath("path", tt.in)
		if tt.want == "" {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "path" {
				t.Errorf("ResolvePath(%q) = %q, %v; want a *FieldError", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolvePath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestUploadToADirectoryPath: an upload to a path that names a directory
// ("d/f/", "d/.", "..") is INVALID_ARGUMENT's *FieldError naming path, and
// creates nothing; it made the file "d/f" (red-team pass).
func TestUploadToADirectoryPath(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	for _, p := range []string{"d/f/", "/workspace/d/f//", "d/f/.", "d/f/..", "./", "/"} {
		_, _, err := h.m.Upload(context.Background(), alice, s.ID(), p, 0, strings.NewReader("x"))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "path" || !strings.Contains(err.Error(), "names a directory") {
			t.Errorf("Upload(%q): %v, want a *FieldError naming path", p, err)
		}
	}
	for _, p := range []string{"d/f", "d", "workspace"} {
		if _, exists, err := h.m.Stat(context.Background(), alice, s.ID(), p); err != nil || exists {
			t.Errorf("Stat(%q) after the refused uploads: exists %v, %v", p, exists, err)
		}
	}
	if _, _, err := h.m.Upload(context.Background(), alice, s.ID(), "d/f", 0, strings.NewReader("x")); err != nil {
		t.Errorf("Upload(d/f): %v", err)
	}
}

// FuzzResolvePath: whatever a client sends, a resolved path is absolute,
// clean (no "." or ".." element, no empty element) and free of NULs; or
// the request is refused with a *FieldError.
func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{".", "../x", "/a/../../b", "a//b/./c", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ResolvePath("path", p)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("ResolvePath(%q): %v is not a *FieldError", p, err)
			}
			return
		}
		if !strings.HasPrefix(got, "/") || strings.ContainsRune(got, 0) {
			t.Fatalf("ResolvePath(%q) = %q", p, got)
		}
		if got != "/" {
			for _, el := range strings.Split(got[1:], "/") {
				if el == "" || el == "." || el == ".." {
					t.Fatalf("ResolvePath(%q) = %q holds %q", p, got, el)
				}
			}
		}
	})
}

// TestIDsNameTheirNode: a sandbox's id is the node's (package nodeid);
// a lookup of another node's id, or of one made before a restart, says
// so rather than a bare not found.
func TestIDsNameTheirNode(t *testing.T) {
	ids, err := nodeid.NewIssuer("node-a")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{IDs: ids})
	s := h.create(t, CreateParams{})
	if p, err := nodeid.Parse(s.ID()); err != nil || p.Node != "node-a" {
		t.Fatalf("id %q: %v", s.ID(), err)
	}
	if s.Info().Box == s.ID() || !strings.HasPrefix(s.Info().Box, "sb-") {
		t.Fatalf("box id %q", s.Info().Box)
	}
	other, _ := nodeid.NewIssuer("node-b")
	var oe *nodeid.OtherNodeError
	if _, err := h.m.Get(alice, other.New()); !errors.As(err, &oe) || oe.Owner != "node-b" {
		t.Fatalf("Get of node-b's id: %v", err)
	}
	earlier, _ := nodeid.NewIssuer("node-a")
	var ee *nodeid.EarlierRunError
	if _, err := h.m.Get(alice, earlier.New()); !errors.As(err, &ee) {
		t.Fatalf("Get of an earlier run's id: %v", err)
	}
	if _, err := h.m.Get(alice, "sb-0123"); !errors.Is(err, ErrNotFound) || !errors.Is(err, nodeid.ErrMalformed) {
		t.Fatalf("Get of a malformed id: %v", err)
	}
	if _, err := h.m.Get(bob, s.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of alice's sandbox by bob: %v", err)
	}
}

// TestClientsOfAPrincipal: two clients of one principal (and the
// principal itself) do not see each other's sandboxes, while the
// principal's limit counts them all together: a client key narrows, and
// never buys room.
func TestClientsOfAPrincipal(t *testing.T) {
	h := newHarness(t, Config{MaxSandboxes: 10, MaxPerPrincipal: 2})
	c1, err := alice.WithClient(strings.Repeat("1", principal.MinClientKeyLength))
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := alice.WithClient(strings.Repeat("2", principal.MinClientKeyLength))
	s1 := h.create(t, CreateParams{Owner: c1})
	if _, err := h.m.Get(c2, s1.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the other client's Get: %v", err)
	}
	if _, err := h.m.Get(alice, s1.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the unscoped principal's Get: %v", err)
	}
	if _, err := h.m.Delete(c2, s1.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the other client's Delete: %v", err)
	}
	if l := h.m.List(c2, nil); len(l) != 0 {
		t.Errorf("the other client lists %d", len(l))
	}
	h.create(t, CreateParams{Owner: c2})
	var q *QuotaError
	_, err = h.m.Create(context.Background(), CreateParams{Owner: alice, Limits: limits.Default()})
	if !errors.As(err, &q) || q.Flag != "--max-sandboxes-per-principal" {
		t.Fatalf("alice's third, after one per client: %v", err)
	}
	// Another principal is not charged for them.
	h.create(t, CreateParams{Owner: bob})
	if got := h.m.List(c1, nil); len(got) != 1 || got[0].ID() != s1.ID() || got[0].Info().Owner != c1.String() {
		t.Errorf("client 1 lists %v", got)
	}
}

// uploadBody blocks its first Read until the sandbox starts ending, then
// fails as the mechanism's copy does when its context ends.
type uploadBody struct {
	started chan struct{}
	s       *Sandbox
}

func (b *uploadBody) Read([]byte) (int, error) {
	close(b.started)
	<-b.s.ctx.Done()
	return 0, context.Canceled
}

// TestDeleteDuringUpload: a sandbox deleted while a file is uploaded
// answers the uploader SANDBOX_NOT_READY (ErrNotReady), not CANCELLED,
// which is for a call its own client cancelled.
func TestDeleteDuringUpload(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	body := &uploadBody{started: make(chan struct{}), s: s}
	errc := make(chan error, 1)
	go func() {
		_, _, err := h.m.Upload(context.Background(), alice, s.ID(), "big.bin", 0, body)
		errc <- err
	}()
	<-body.started
	if _, err := h.m.Delete(alice, s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrNotReady) || errors.Is(err, context.Canceled) {
		t.Fatalf("upload during the delete: %v; want ErrNotReady", err)
	}
}

// TestExecArgv: an argv runs without a shell (the shell runtime's
// trampoline for a bare name, looked up on PATH; the program itself
// for a path), whatever the sandbox's runtime; refusals name their
// field, before the exec exists.
func TestExecArgv(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{Runtime: program.Python})
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"printf", "%s|", "a b", "$HOME", "-x", "A=b"}, `["/bin/sh" "-c" "exec \"$@\"" "execfarm" "printf" "%s|" "a b" "$HOME" "-x" "A=b"]`},
		{[]string{"/usr/bin/printf", "x y"}, `["/usr/bin/printf" "x y"]`},
		{[]string{"./run.sh"}, `["./run.sh"]`},
	} {
		e, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Argv: tt.argv})
		if err != nil {
			t.Fatalf("argv %q: %v", tt.argv, err)
		}
		res, err := e.Wait(context.Background())
		if err != nil || res.State != registry.StateCompleted {
			t.Fatalf("argv %q: %+v, %v", tt.argv, res, err)
		}
		if out, _, _, _ := e.Read(registry.Stdout, 0); string(out) != tt.want {
			t.Errorf("argv %q ran %s, want %s", tt.argv, out, tt.want)
		}
		if m := e.Meta(); m.Runtime != program.Shell {
			t.Errorf("argv %q: runtime %q, want shell", tt.argv, m.Runtime)
		}
	}
	// The preview shows the arguments as a shell would read them back.
	es := events(t, h.m, alice, s.ID())
	if got := es[1].Value.CodePreview; got != `printf '%s|' 'a b' '$HOME' -x A=b` {
		t.Errorf("code preview %q", got)
	}
	for _, tt := range []struct {
		p     ExecParams
		field string
	}{
		{ExecParams{Argv: []string{""}}, "argv"},
		{ExecParams{Argv: []string{}}, "argv"},
		{ExecParams{Argv: []string{"echo"}, Code: "echo"}, "argv"},
		{ExecParams{Argv: []string{"echo"}, Runtime: program.Python}, "runtime"},
	} {
		_, err := h.m.Exec(context.Background(), alice, s.ID(), tt.p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%+v: %v, want a FieldError of %s", tt.p, err, tt.field)
		}
	}
	var nul *program.NULError
	if _, err := h.m.Exec(context.Background(), alice, s.ID(), ExecParams{Argv: []string{"echo", "a\x00b"}}); !errors.As(err, &nul) || nul.Field != "argv" {
		t.Errorf("argv with a NUL byte: %v, want a NULError of argv", err)
	}
}

// TestExtend: Extend sets the time left from now, shorter or longer, and
// re-arms the expiry; the whole lifetime stays under the ceiling; another
// principal's sandbox is not found.
func TestExtend(t *testing.T) {
	var mu sync.Mutex
	var skew time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	h := newHarness(t, Config{Now: clock, MaxLifetime: time.Hour})
	s := h.create(t, CreateParams{Lifetime: durationPtr(time.Minute)})
	created := s.Info().Created
	// Half an hour later, 20 more minutes fit (50 min in all), 40 do not.
	mu.Lock()
	skew = 30 * time.Minute
	mu.Unlock()
	got, err := h.m.Extend(alice, s.ID(), 20*60)
	if err != nil {
		t.Fatal(err)
	}
	if exp := got.Info().Expires; exp.Sub(created) < 50*time.Minute || exp.Sub(created) > 51*time.Minute {
		t.Errorf("expires %v after creation, want 50m", exp.Sub(created))
	}
	var qe *QuotaError
	if _, err := h.m.Extend(alice, s.ID(), 40*60); !errors.As(err, &qe) || qe.Flag != "--sandbox-max-lifetime" || qe.Max != 3600 || qe.Asked < 70*60 {
		t.Errorf("extend past the ceiling: %v, want a QuotaError naming --sandbox-max-lifetime", err)
	} else if !strings.Contains(err.Error(), "ttl_seconds 2400") {
		t.Errorf("message %q does not name ttl_seconds", err)
	}
	if _, err := h.m.Extend(alice, s.ID(), 0); !errors.As(err, &qe) {
		t.Errorf("extend to no expiry under a ceiling: %v, want a QuotaError", err)
	}
	if _, err := h.m.Extend(alice, s.ID(), MaxSeconds+1); !errors.As(err, &qe) {
		t.Errorf("extend past MaxSeconds: %v, want a QuotaError", err)
	}
	var fe *FieldError
	if _, err := h.m.Extend(alice, s.ID(), -1); !errors.As(err, &fe) || fe.Field != "ttl_seconds" {
		t.Errorf("negative ttl: %v, want a FieldError of ttl_seconds", err)
	}
	if _, err := h.m.Extend(bob, s.ID(), 60); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's extend: %v, want ErrNotFound", err)
	}
	if in := s.Info(); in.Expires.Sub(created) < 50*time.Minute {
		t.Errorf("a refused extend changed the expiry: %v", in.Expires.Sub(created))
	}
	// Shortened to a moment: it expires (the real timer), reason expired.
	mu.Lock()
	skew = 0
	mu.Unlock()
	if _, err := h.m.Extend(alice, s.ID(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the shortened sandbox did not expire")
	}
	es := events(t, h.m, alice, s.ID())
	if last := es[len(es)-1].Value; last.Kind != EventEnded || last.Reason != EndExpired {
		t.Errorf("last event %+v, want ended, expired", last)
	}
	if _, err := h.m.Extend(alice, s.ID(), 60); !errors.Is(err, ErrNotFound) {
		t.Errorf("extend of an ended sandbox: %v, want ErrNotFound", err)
	}
}

// TestExtendTimerRace: a lifetime timer that fires after Extend moved the
// expiry later ends nothing.
func TestExtendTimerRace(t *testing.T) {
	h := newHarness(t, Config{MaxLifetime: NoLifetimeCeiling})
	s := h.create(t, CreateParams{Lifetime: durationPtr(time.Hour)})
	if _, err := h.m.Extend(alice, s.ID(), 2*3600); err != nil {
		t.Fatal(err)
	}
	h.m.expire(s, EndExpired) // the old timer, firing late
	if _, err := h.m.Get(alice, s.ID()); err != nil {
		t.Fatalf("the extended sandbox expired: %v", err)
	}
	// Without a ceiling, 0 is no expiry.
	if got, err := h.m.Extend(alice, s.ID(), 0); err != nil || !got.Info().Expires.IsZero() {
		t.Fatalf("extend to no expiry: %v, %v", got.Info().Expires, err)
	}
	h.m.expire(s, EndExpired)
	if _, err := h.m.Get(alice, s.ID()); err != nil {
		t.Fatalf("a sandbox without expiry expired: %v", err)
	}
	var fe *FieldError
	if _, err := h.m.Extend(alice, s.ID(), MaxSeconds+1); !errors.As(err, &fe) || fe.Field != "ttl_seconds" {
		t.Errorf("past MaxSeconds without a ceiling: %v, want a FieldError of ttl_seconds", err)
	}
}

// TestMove: Move renames a file or a directory's tree, logs file_moved,
// refuses an existing destination without overwrite, a missing source,
// the root and the workspace, and a destination inside the source.
func TestMove(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.create(t, CreateParams{})
	ctx := context.Background()
	for p, c := range map[string]string{"a.txt": "A", "b.txt": "B", "d/x": "X"} {
		if _, _, err := h.m.Upload(ctx, alice, s.ID(), p, 0, strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	src, dst, err := h.m.Move(ctx, alice, s.ID(), "a.txt", "sub/../c.txt", false)
	if err != nil || src != "/workspace/a.txt" || dst != "/workspace/c.txt" {
		t.Fatalf("Move = %q, %q, %v", src, dst, err)
	}
	if _, out := h.run(t, alice, s, ExecParams{Code: "cat c.txt"}); out != "A" {
		t.Errorf("moved file holds %q", out)
	}
	if _, ok, _ := h.m.Stat(ctx, alice, s.ID(), "a.txt"); ok {
		t.Error("the source is still there")
	}
	var fileErr *FileError
	if _, _, err := h.m.Move(ctx, alice, s.ID(), "c.txt", "b.txt", false); !errors.As(err, &fileErr) || !errors.Is(err, fs.ErrExist) {
		t.Errorf("move over an existing file: %v, want a FileError of fs.ErrExist", err)
	}
	if _, _, err := h.m.Move(ctx, alice, s.ID(), "c.txt", "b.txt", true); err != nil {
		t.Errorf("move with overwrite: %v", err)
	}
	if _, _, err := h.m.Move(ctx, alice, s.ID(), "nope", "x", false); !errors.As(err, &fileErr) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("move of a missing source: %v, want a FileError of fs.ErrNotExist", err)
	}
	if _, _, err := h.m.Move(ctx, alice, s.ID(), "d", "dd", false); err != nil {
		t.Errorf("move a directory: %v", err)
	}
	if _, ok, _ := h.m.Stat(ctx, alice, s.ID(), "dd/x"); !ok {
		t.Error("the directory's file did not move with it")
	}
	for _, tt := range []struct{ src, dst, field string }{
		{"", "x", "source"}, {"x", "", "destination"}, {"/", "x", "source"}, {"x", "/workspace", "destination"},
		{"x", "/..", "destination"}, {"x\x00", "y", "source"}, {"dd", "dd/e", "destination"}, {"b.txt", "./b.txt", "destination"},
	} {
		var fe *FieldError
		if _, _, err := h.m.Move(ctx, alice, s.ID(), tt.src, tt.dst, true); !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("Move(%q, %q): %v, want a FieldError of %s", tt.src, tt.dst, err, tt.field)
		}
	}
	if _, _, err := h.m.Move(ctx, bob, s.ID(), "b.txt", "e.txt", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's Move: %v, want ErrNotFound", err)
	}
	var moved []string
	for _, en := range events(t, h.m, alice, s.ID()) {
		if e := en.Value; e.Kind == EventFileMoved {
			moved = append(moved, e.Path+">"+e.Destination)
		}
	}
	if want := "/workspace/a.txt>/workspace/c.txt /workspace/c.txt>/workspace/b.txt /workspace/d>/workspace/dd"; strings.Join(moved, " ") != want {
		t.Errorf("file_moved events %q, want %q", moved, want)
	}
}
