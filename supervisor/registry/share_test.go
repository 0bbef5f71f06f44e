package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// runLines finishes an execution of owner (account: what follows the
// client's "@", as the supervisor keys them) with n console lines of
// size bytes, out on stdout and the error text msg.
func runLines(r *Registry, owner string, n, size int, out, msg string) *Execution {
	account := owner
	if i := strings.LastIndex(owner, "@"); i >= 0 {
		account = owner[i+1:]
	}
	e := r.Create(Meta{Owner: owner, Account: account, MaxOutputBytes: 1 << 20})
	_ = e.Start()
	lines := make([]Line, n)
	for i := range lines {
		lines[i] = Line{Text: strings.Repeat("l", size)}
	}
	e.AppendLines(lines)
	e.Write(Stdout, []byte(out))
	res := completed()
	if msg != "" {
		res = Result{State: StateFailed, Reason: ReasonExited, ExitCode: 1, Error: msg}
	}
	e.Finish(res)
	return e
}

// TestRetentionLinesCut: console lines of terminal executions are cut in
// the retention share like streams, so that the budget holds. Before,
// they were counted but never cut: 400 goja runs of 500 000 characters
// of console lines each kept 637 MB against a 64 MiB budget.
func TestRetentionLinesCut(t *testing.T) {
	const budget = 100_000
	r := New(Config{MaxBufferedBytes: budget})
	var runs []*Execution
	for range 40 {
		runs = append(runs, runLines(r, "token:bob", 100, 100, "", ""))
	}
	if got := r.BufferedBytes(); got > budget {
		t.Fatalf("BufferedBytes = %d after 40 runs of 100 lines, over the budget %d", got, budget)
	}
	for i, e := range runs {
		res, _ := e.Result()
		if n := len(e.Lines()); n >= 100 || n == 0 || !res.StdoutTruncated {
			t.Errorf("run %d keeps %d of 100 lines, stdout truncated %v: want its share", i, n, res.StdoutTruncated)
		}
		for _, l := range e.Lines() {
			if l.Text != strings.Repeat("l", 100) {
				t.Fatalf("run %d: a cut line %q: lines are kept whole", i, l.Text)
			}
		}
	}
}

// TestRetentionAccountShares: the retention budget is shared among
// accounts first, then among an account's owners (its clients: the MCP
// bridge's tokens), then among their executions' parts: a principal's
// flood, or a client's, cuts its own results and leaves another's
// within its share whole. Before, every stream of every account had one
// equal share: bob's 100 results cut alice's one.
func TestRetentionAccountShares(t *testing.T) {
	const budget = 100_000
	r := New(Config{MaxBufferedBytes: budget})
	aliceOut := strings.Repeat("a", 20_000)
	aliceMsg := "Error: " + strings.Repeat("m", 1000)
	alice := runLines(r, "token:alice", 50, 100, aliceOut, aliceMsg)
	// One client of carol's keeps a result; another client of hers floods.
	carolA := runLines(r, "client:a@token:carol", 20, 50, strings.Repeat("c", 5000), "")
	for i := range 100 {
		runLines(r, "token:bob", 100, 100, strings.Repeat("b", 2000), "")
		runLines(r, fmt.Sprintf("client:b%d@token:carol", i%3), 100, 100, strings.Repeat("b", 2000), "")
	}
	if got := r.BufferedBytes(); got > budget {
		t.Errorf("BufferedBytes = %d, over the budget %d", got, budget)
	}
	if got, _, _ := mustRead(t, alice, Stdout, 0); got != aliceOut {
		t.Errorf("alice's stdout was cut to %d bytes by bob's and carol's floods", len(got))
	}
	res, _ := alice.Result()
	if len(alice.Lines()) != 50 || res.Error != aliceMsg || res.StdoutTruncated {
		t.Errorf("alice's result was cut: %d lines, error of %d bytes, stdout truncated %v", len(alice.Lines()), len(res.Error), res.StdoutTruncated)
	}
	if got, _, _ := mustRead(t, carolA, Stdout, 0); len(got) != 5000 || len(carolA.Lines()) != 20 {
		t.Errorf("carol's client a keeps %d bytes and %d lines: her other clients' flood cut it", len(got), len(carolA.Lines()))
	}
}

// TestRetentionErrorCut: error texts (a thrown error's message is up to
// 16 Ki UTF-16 units) are counted and cut, to MinErrorKeep bytes at
// least, on a rune boundary, with a marker.
func TestRetentionErrorCut(t *testing.T) {
	const budget = 20_000
	r := New(Config{MaxBufferedBytes: budget})
	msg := "Error: " + strings.Repeat("é", 24<<10) // 48 KiB
	var runs []*Execution
	for range 10 {
		runs = append(runs, runLines(r, "token:bob", 0, 0, "", msg))
	}
	if got := r.BufferedBytes(); got > budget {
		t.Errorf("BufferedBytes = %d after 10 errors of 48 KiB, over the budget %d", got, budget)
	}
	for i, e := range runs {
		res, _ := e.Result()
		if len(res.Error) < MinErrorKeep || len(res.Error) >= len(msg) || !strings.HasSuffix(res.Error, errorCutMarker) ||
			!strings.HasPrefix(msg, strings.TrimSuffix(res.Error, errorCutMarker)) {
			t.Errorf("run %d: error of %d bytes %.40q...: want a cut of the message with the marker", i, len(res.Error), res.Error)
		}
	}
}

// TestSubscribeLinesAfterCut: a subscriber that read lines the
// retention share then cuts goes on without a fault.
func TestSubscribeLinesAfterCut(t *testing.T) {
	r := New(Config{MaxBufferedBytes: 10_000})
	e := r.Create(Meta{Account: "token:bob", Owner: "token:bob"})
	_ = e.Start()
	lines := make([]Line, 100)
	for i := range lines {
		lines[i] = Line{Text: strings.Repeat("l", 100)}
	}
	e.AppendLines(lines)
	var got int
	var res *Result
	for ev, err := range e.SubscribeLines(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			// Mid-subscription: the execution ends, then another's end
			// cuts its lines.
			e.Finish(completed())
			runLines(r, "token:bob", 10, 100, "", "")
		}
		got += len(ev.Lines)
		res = ev.Result
	}
	if got != 100 || res == nil {
		t.Errorf("subscriber got %d lines, result %v", got, res)
	}
}

// TestRetentionCountPerClient: past MaxRetained, within the account
// holding the most, the client holding the most loses its oldest: one
// MCP token's flood of results evicts its own, not an older result of
// another token of the same principal. Before, the account's oldest went.
func TestRetentionCountPerClient(t *testing.T) {
	r := New(Config{MaxRetained: 10})
	finish := func(owner string) *Execution {
		e := r.Create(Meta{Owner: owner, Account: "token:bridge"})
		_, _ = e.Cancel()
		return e
	}
	a := finish("client:a@token:bridge")
	for range 50 {
		finish("client:b@token:bridge")
	}
	if _, err := r.Get(a.ID()); err != nil {
		t.Errorf("client a's result after client b's 50: %v", err)
	}
	if n := r.Len(); n != 10 {
		t.Errorf("%d held, want MaxRetained, 10", n)
	}
}
