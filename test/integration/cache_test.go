//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/cache"
)

// TestScriptCache: a successful new script is cached once (same code twice
// caches once), a failed one never; `cached` finds it by a partial name;
// ListCache filters; ClearCache counts; 20 concurrent distinct scripts
// give 20 entries.
func TestScriptCache(t *testing.T) {
	in := requireSandbox(t)
	c := in.client
	ctx := callCtx(t)
	if _, err := c.ClearCache(ctx, &sandboxv1.ClearCacheRequest{}); err != nil {
		t.Fatal(err)
	}
	code := "// list-pods: prints pod names\nconsole.log('pods:', 3)"
	first := execute(t, c, gojaReq(code, 0))
	if !first.GetSuccess() || first.GetCached() == nil {
		t.Fatalf("first run: %s, cached %v", describe(first), first.GetCached())
	}
	name := first.GetCached().GetName()
	if !strings.HasPrefix(name, "script-") || !strings.HasSuffix(name, ".ts") || first.GetCached().GetDescription() != "list-pods: prints pod names" {
		t.Fatalf("entry = %+v", first.GetCached())
	}
	if second := execute(t, c, gojaReq(code, 0)); second.GetCached() != nil {
		t.Fatalf("same code cached twice: %+v", second.GetCached())
	}
	if failed := execute(t, c, gojaReq("// broken\nthrow new Error('no')", 0)); failed.GetSuccess() || failed.GetCached() != nil {
		t.Fatalf("failed run cached: %s %+v", describe(failed), failed.GetCached())
	}
	hash := name[len(name)-15 : len(name)-3] // the 12 hex digits
	// As a ProDisco client runs it: output is its console lines joined.
	byName := execute(t, c, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: hash}})
	if !byName.GetSuccess() || byName.GetOutput() != "pods: 3" {
		t.Fatalf("cached run: %s", describe(byName))
	}
	list, err := c.ListCache(ctx, &sandboxv1.ListCacheRequest{Filter: ptrTo("list-*")})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetName() != name {
		t.Fatalf("ListCache(list-*) = %v, %v", list.GetEntries(), err)
	}
	_, err = c.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: "no-such-script"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("unknown cached name: %v, want NOT_FOUND", err)
	}

	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Execute(ctx, gojaReq(fmt.Sprintf("// script %d\nconsole.log(%d)", i, i), 0))
			if err != nil || !resp.GetSuccess() || resp.GetCached() == nil {
				t.Errorf("script %d: %v %v", i, err, resp)
			}
		}()
	}
	wg.Wait()
	all, err := c.ListCache(ctx, &sandboxv1.ListCacheRequest{})
	if err != nil || len(all.GetEntries()) != 21 {
		t.Fatalf("ListCache = %d entries, %v; want 21", len(all.GetEntries()), err)
	}
	cleared, err := c.ClearCache(ctx, &sandboxv1.ClearCacheRequest{})
	if err != nil || cleared.GetDeletedCount() != 21 {
		t.Fatalf("ClearCache = %v, %v; want 21", cleared, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestScriptCacheBoundedAndTrusted: distinct successful scripts beyond
// the cache's bound push the oldest out (a client cannot fill the disk),
// and a script planted in the cache directory by another user, dated 2099
// so that it would be listed first, is neither listed nor run by `cached`.
func TestScriptCacheBoundedAndTrusted(t *testing.T) {
	requireSandbox(t)
	var dir string
	in, err := startInstance("cache-bound", queueSlot, 4, 2, 5*time.Second, func(cfg *supervisor.Config) {
		dir = filepath.Join(host.dir, "cache-bound", "bounded-scripts")
		c, err := cache.OpenStore(cache.Config{Dir: dir, MaxScripts: 3})
		if err != nil {
			t.Errorf("open cache: %v", err)
		}
		cfg.Cache = c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := in.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := callCtx(t)
	var names []string
	for i := range 5 {
		resp := execute(t, in.client, gojaReq(fmt.Sprintf("// bounded %d\nconsole.log(%d)", i, i), 0))
		if !resp.GetSuccess() || resp.GetCached() == nil {
			t.Fatalf("run %d: %s", i, describe(resp))
		}
		names = append(names, resp.GetCached().GetName())
	}
	list, err := in.client.ListCache(ctx, &sandboxv1.ListCacheRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range list.GetEntries() {
		listed = append(listed, e.GetName())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 || len(listed) != 3 || !slices.Contains(listed, names[4]) || slices.Contains(listed, names[0]) {
		t.Fatalf("cache holds %d files, lists %v; want the 3 newest of %v", len(ents), listed, names)
	}

	code := "// planted\nconsole.log('planted script ran')"
	planted := cache.FileName(code, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	p := filepath.Join(dir, planted)
	if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	list, err = in.client.ListCache(ctx, &sandboxv1.ListCacheRequest{})
	if err != nil || len(list.GetEntries()) != 3 || list.GetEntries()[0].GetName() == planted {
		t.Fatalf("ListCache after a planted script = %v, %v", list.GetEntries(), err)
	}
	_, err = in.client.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: planted}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("cached run of a planted script: %v, want NOT_FOUND", err)
	}
}

// TestScriptCachePerPrincipal: a principal's cached scripts exist for it
// alone: another principal does not list them (nor their descriptions),
// cannot run them by name and clears none of them; it has a cache of its
// own. (One cache for all let a principal read another's code preview,
// run it and delete it.)
func TestScriptCachePerPrincipal(t *testing.T) {
	si := startSessionInstance(t, "cache-owners", 2)
	ctx := callCtx(t)
	alice, bob := si.execs["alice"], si.execs["bob"]
	mine := execute(t, alice, gojaReq("// alice: deploy helper, key=ALICE-SECRET\nconsole.log('alice ran')", 0))
	if !mine.GetSuccess() || mine.GetCached() == nil {
		t.Fatalf("alice's run: %s", describe(mine))
	}
	name := mine.GetCached().GetName()
	if l, err := bob.ListCache(ctx, &sandboxv1.ListCacheRequest{}); err != nil || len(l.GetEntries()) != 0 {
		t.Fatalf("bob lists %v, %v; want nothing", l.GetEntries(), err)
	}
	_, err := bob.Execute(ctx, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: name}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("bob runs alice's script: %v; want NOT_FOUND", err)
	}
	if n, err := bob.ClearCache(ctx, &sandboxv1.ClearCacheRequest{}); err != nil || n.GetDeletedCount() != 0 {
		t.Fatalf("bob's ClearCache: %v, %v; want 0", n, err)
	}
	theirs := execute(t, bob, gojaReq("// bob's own\nconsole.log('bob ran')", 0))
	if !theirs.GetSuccess() || theirs.GetCached() == nil {
		t.Fatalf("bob's run: %s", describe(theirs))
	}
	l, err := alice.ListCache(ctx, &sandboxv1.ListCacheRequest{})
	if err != nil || len(l.GetEntries()) != 1 || l.GetEntries()[0].GetName() != name {
		t.Fatalf("alice lists %v, %v; want her script alone", l.GetEntries(), err)
	}
	if again := execute(t, alice, &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Cached{Cached: name}}); again.GetOutput() != "alice ran" {
		t.Fatalf("alice's cached run: %s", describe(again))
	}
}
