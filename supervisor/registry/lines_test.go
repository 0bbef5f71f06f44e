package registry

import (
	"context"
	"testing"
)

// TestLines: console lines are kept in order, read by a subscriber that
// joins late and one that follows live, counted in the budget, and
// dropped once the execution is terminal; the subscription ends with the
// result.
func TestLines(t *testing.T) {
	r := New(Config{})
	e := r.Create(Meta{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	e.AppendLines([]Line{{Text: "a"}, {Text: "[ERROR] b", Error: true}})
	live := make(chan []Line, 1)
	go func() {
		var got []Line
		for ev, err := range e.SubscribeLines(context.Background()) {
			if err != nil || ev.Result != nil {
				break
			}
			got = append(got, ev.Lines...)
		}
		live <- got
	}()
	e.AppendLines([]Line{{Text: "c"}})
	e.AppendLines(nil)
	if got := r.BufferedBytes(); got != int64(len("a")+len("[ERROR] b")+len("c")+3*lineOverhead) {
		t.Errorf("buffered %d bytes", got)
	}
	e.Finish(Result{State: StateCompleted, Reason: ReasonExited, Success: true})
	e.AppendLines([]Line{{Text: "late"}})
	want := []Line{{Text: "a"}, {Text: "[ERROR] b", Error: true}, {Text: "c"}}
	check := func(who string, got []Line) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %+v, want %+v", who, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: line %d %+v, want %+v", who, i, got[i], want[i])
			}
		}
	}
	check("live subscriber", <-live)
	check("Lines", e.Lines())
	var late []Line
	var res *Result
	for ev, err := range e.SubscribeLines(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, ev.Lines...)
		res = ev.Result
	}
	check("late subscriber", late)
	if res == nil || res.State != StateCompleted {
		t.Fatalf("last event %+v, want the result", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e2 := r.Create(Meta{})
	for _, err := range e2.SubscribeLines(ctx) {
		if err == nil {
			t.Fatal("a cancelled subscription yielded no error")
		}
	}
}
