package supervisor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/cache"
	"github.com/execfarm/execfarm/supervisor/execution"
	"github.com/execfarm/execfarm/supervisor/principal"
	"github.com/execfarm/execfarm/supervisor/scheduler"
)

// TestExecutionsBelongToTheirPrincipal: an execution is its submitter's;
// to another principal GetExecution and CancelExecution say NOT_FOUND
// exactly as for an id that does not exist, and ListExecutions leaves it
// out. (Its sandbox cannot start here: it ends FAILED, which is all the
// test needs.)
func TestExecutionsBelongToTheirPrincipal(t *testing.T) {
	s := preparingServer(t)
	t.Cleanup(func() { _ = s.runner.Shutdown(time.Second) })
	alice := principal.NewContext(context.Background(), principal.Token("alice"))
	bob := principal.NewContext(context.Background(), principal.Token("bob"))
	resp, err := s.ExecuteAsync(alice, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetExecutionId()
	ctx, cancel := context.WithTimeout(alice, 10*time.Second)
	defer cancel()
	got, err := s.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id, Wait: true})
	if err != nil || got.GetResult() == nil {
		t.Fatalf("owner's GetExecution = %v, %v", got, err)
	}
	// An id this run could have made, but did not.
	never := s.IDs().New()
	_, unknown := s.GetExecution(bob, &sandboxv1.GetExecutionRequest{ExecutionId: never})
	_, err = s.GetExecution(bob, &sandboxv1.GetExecutionRequest{ExecutionId: id})
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != strings.ReplaceAll(status.Convert(unknown).Message(), never, id) {
		t.Errorf("another principal's GetExecution = %v, want NOT_FOUND (unknown id: %v)", err, unknown)
	}
	if _, err := s.CancelExecution(bob, &sandboxv1.CancelExecutionRequest{ExecutionId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("another principal's CancelExecution = %v, want NOT_FOUND", err)
	}
	if l, err := s.ListExecutions(bob, &sandboxv1.ListExecutionsRequest{}); err != nil || len(l.GetExecutions()) != 0 {
		t.Errorf("another principal's ListExecutions = %v, %v; want nothing", l.GetExecutions(), err)
	}
	if l, err := s.ListExecutions(alice, &sandboxv1.ListExecutionsRequest{}); err != nil || len(l.GetExecutions()) != 1 || l.GetExecutions()[0].GetExecutionId() != id {
		t.Errorf("owner's ListExecutions = %v, %v", l.GetExecutions(), err)
	}
	// A call without a principal in its context is the local principal's.
	if _, err := s.GetExecution(context.Background(), &sandboxv1.GetExecutionRequest{ExecutionId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("local principal's GetExecution of alice's = %v, want NOT_FOUND", err)
	}
}

// TestCachedScriptsBelongToTheirClient: a client's cached scripts are its
// own, as its executions are. A successful run's code goes to the cache
// of the client that submitted it; another client of the same principal
// (another MCP token's client) and the principal itself neither list it,
// nor run it by name (NOT_FOUND, the message of a name no one saved), nor
// see it in an ambiguous partial name (NOT_FOUND: none of theirs
// matches), nor clear it. (No sandbox starts here: the run's save is
// done as run.finish does it, with the job's owner.)
func TestCachedScriptsBelongToTheirClient(t *testing.T) {
	s := preparingServer(t)
	store, err := cache.OpenStore(cache.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Cache = store
	sched, err := scheduler.New(scheduler.Config{MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.runner, err = execution.New(execution.Config{Sandbox: &s.cfg.Sandbox, Defaults: s.cfg.Defaults, Registry: s.reg, Scheduler: sched, Cache: store})
	if err != nil {
		t.Fatal(err)
	}
	client := func(key string) context.Context {
		p, err := principal.Local().WithClient(key)
		if err != nil {
			t.Fatal(err)
		}
		return principal.NewContext(context.Background(), p)
	}
	alice, bob := client(strings.Repeat("a", 40)), client(strings.Repeat("b", 40))
	local := context.Background()

	const code = "// alice private\nconsole.log('alice secret','ALICE-KEY-42')"
	j, err := s.prepare(alice, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code}}, false)
	if err != nil || !j.Cacheable {
		t.Fatalf("alice's job: %+v, %v; want a cacheable one", j, err)
	}
	c, err := store.For(cache.Owner{Principal: j.Account, Client: j.Client})
	if err != nil {
		t.Fatal(err)
	}
	saved, _, err := c.Save(j.Code, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	list := func(ctx context.Context) []string {
		t.Helper()
		l, err := s.ListCache(ctx, &sandboxv1.ListCacheRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range l.GetEntries() {
			names = append(names, e.GetName())
		}
		return names
	}
	run := func(ctx context.Context, name string) (*execution.Job, error) {
		j, err := s.prepare(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: name}}, false)
		if err != nil {
			return nil, rpcError(err)
		}
		return j, nil
	}
	if got := list(alice); len(got) != 1 || got[0] != saved.Name {
		t.Fatalf("alice lists %v; want [%s]", got, saved.Name)
	}
	if j, err := run(alice, "script-"); err != nil || j.CachedName != saved.Name || j.Code != code {
		t.Fatalf("alice runs her script by a partial name: %v", err)
	}
	never := "script-2000-01-01T00-00-00-0123456789ab.ts"
	for who, ctx := range map[string]context.Context{"bob": bob, "the local principal": local} {
		if got := list(ctx); len(got) != 0 {
			t.Errorf("%s lists %v; want nothing", who, got)
		}
		_, unknown := run(ctx, never)
		for _, name := range []string{saved.Name, "script-", saved.ContentHash[:12]} {
			_, err := run(ctx, name)
			if want := strings.ReplaceAll(status.Convert(unknown).Message(), never, name); status.Code(err) != codes.NotFound || status.Convert(err).Message() != want {
				t.Errorf("%s runs %q: %v; want NOT_FOUND %q", who, name, err, want)
			}
		}
		if n, err := s.ClearCache(ctx, &sandboxv1.ClearCacheRequest{}); err != nil || n.GetDeletedCount() != 0 {
			t.Errorf("%s's ClearCache: %v, %v; want 0", who, n, err)
		}
	}
	if got := list(alice); len(got) != 1 {
		t.Errorf("alice lists %v after the others' clears; want her script", got)
	}

	// A client that asks for its holder's scripts (the MCP bridge's
	// clients of one stdio process or tokenless session) saves to and runs
	// from the holder's cache: what it saved outlives it, for the holder
	// and the next such client; alice's own stay hers.
	shared := func(ctx context.Context) context.Context {
		return metadata.NewIncomingContext(ctx, metadata.Pairs(principal.SharedScriptsHeader, principal.SharedScripts))
	}
	j, err = s.prepare(shared(bob), &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: "console.log('kept for the next session')"}}, false)
	if err != nil || j.Client != "" || j.Account != principal.Local().String() {
		t.Fatalf("a sharing client's job: %+v, %v; want the holder's cache", j, err)
	}
	c, err = store.For(cache.Owner{Principal: j.Account, Client: j.Client})
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := c.Save(j.Code, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for who, ctx := range map[string]context.Context{"the local principal": local, "another sharing client": shared(client(strings.Repeat("c", 40)))} {
		if got := list(ctx); len(got) != 1 || got[0] != kept.Name {
			t.Errorf("%s lists %v; want [%s]", who, got, kept.Name)
		}
	}
	if got := list(alice); len(got) != 1 || got[0] != saved.Name {
		t.Errorf("alice lists %v; want only her own [%s]", got, saved.Name)
	}
	if got := list(bob); len(got) != 0 {
		t.Errorf("bob without the header lists %v; want nothing", got)
	}
}

// TestNotFoundQuotesIdShort: an execution id of 60 KiB (within the
// request limit) is quoted in NOT_FOUND cut to quote.MaxBytes with its
// length, never whole, malformed or shaped like this node's ids.
func TestNotFoundQuotesIdShort(t *testing.T) {
	s := preparingServer(t)
	t.Cleanup(func() { _ = s.runner.Shutdown(time.Second) })
	ctx := context.Background()
	for _, id := range []string{strings.Repeat("x", 60<<10), s.IDs().New() + strings.Repeat("0", 60<<10)} {
		_, gerr := s.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
		_, cerr := s.CancelExecution(ctx, &sandboxv1.CancelExecutionRequest{ExecutionId: id})
		for _, err := range []error{gerr, cerr} {
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.NotFound || len(msg) > 512 || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(id))) {
				t.Errorf("a %d-byte id: %v, message of %d bytes: %.300s", len(id), status.Code(err), len(msg), msg)
			}
		}
	}
}
