//go:build linux

package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
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
