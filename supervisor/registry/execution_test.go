package registry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{StatePending.String(), "pending"},
		{StateRunning.String(), "running"},
		{StateCompleted.String(), "completed"},
		{StateFailed.String(), "failed"},
		{StateCancelled.String(), "cancelled"},
		{StateTimeout.String(), "timeout"},
		{State(0).String(), "state(0)"},
		{ReasonExited.String(), "exited"},
		{ReasonTimeout.String(), "timeout"},
		{ReasonCPUTime.String(), "cpu_time"},
		{ReasonMemory.String(), "memory"},
		{ReasonPids.String(), "pids"},
		{ReasonOutputLimit.String(), "output_limit"},
		{ReasonCancelled.String(), "cancelled"},
		{ReasonSignal.String(), "signal"},
		{ReasonInternal.String(), "internal"},
		{Reason(0).String(), "reason(0)"},
		{Stdout.String(), "stdout"},
		{Stderr.String(), "stderr"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestTerminal(t *testing.T) {
	for s, want := range map[State]bool{
		0: false, StatePending: false, StateRunning: false,
		StateCompleted: true, StateFailed: true, StateCancelled: true, StateTimeout: true, 7: false,
	} {
		if got := s.Terminal(); got != want {
			t.Errorf("%v.Terminal() = %v, want %v", s, got, want)
		}
	}
}

func TestStateMachine(t *testing.T) {
	type step struct {
		op      string // "start" or "finish"
		state   State  // for finish
		wantErr error  // for start
		wantOK  bool   // for finish
		after   State
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"start then complete", []step{
			{op: "start", after: StateRunning},
			{op: "finish", state: StateCompleted, wantOK: true, after: StateCompleted},
		}},
		{"start twice", []step{
			{op: "start", after: StateRunning},
			{op: "start", wantErr: ErrAlreadyStarted, after: StateRunning},
		}},
		{"start after finish", []step{
			{op: "finish", state: StateFailed, wantOK: true, after: StateFailed},
			{op: "start", wantErr: ErrTerminal, after: StateFailed},
		}},
		{"first finish wins", []step{
			{op: "start", after: StateRunning},
			{op: "finish", state: StateTimeout, wantOK: true, after: StateTimeout},
			{op: "finish", state: StateCompleted, wantOK: false, after: StateTimeout},
			{op: "finish", state: StateCancelled, wantOK: false, after: StateTimeout},
		}},
		{"non-terminal finish rejected", []step{
			{op: "finish", state: StateRunning, wantOK: false, after: StatePending},
			{op: "finish", state: StatePending, wantOK: false, after: StatePending},
			{op: "finish", state: 0, wantOK: false, after: StatePending},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, 0)
			if got := e.State(); got != StatePending {
				t.Fatalf("new execution state = %v, want pending", got)
			}
			for i, s := range tt.steps {
				switch s.op {
				case "start":
					if err := e.Start(); !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d: Start() = %v, want %v", i, err, s.wantErr)
					}
				case "finish":
					if ok := e.Finish(Result{State: s.state}); ok != s.wantOK {
						t.Fatalf("step %d: Finish(%v) = %v, want %v", i, s.state, ok, s.wantOK)
					}
				}
				if got := e.State(); got != s.after {
					t.Fatalf("step %d: state = %v, want %v", i, got, s.after)
				}
				res, done := e.Result()
				if done != s.after.Terminal() || (done && res.State != s.after) {
					t.Fatalf("step %d: Result() = %v, %v", i, res.State, done)
				}
			}
		})
	}
}

func TestFinishConcurrent(t *testing.T) {
	e := newExec(t, 0)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wins atomic.Int32
	winner := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if e.Finish(Result{State: StateFailed, ExitCode: i + 1}) {
				wins.Add(1)
				winner <- i + 1
			}
		})
	}
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Fatalf("%d Finish calls won, want 1", got)
	}
	res, _ := e.Result()
	if w := <-winner; res.ExitCode != w {
		t.Errorf("result exit code %d, winner %d", res.ExitCode, w)
	}
	select {
	case <-e.Done():
	default:
		t.Error("Done not closed after Finish")
	}
}

func TestFinishFillsResult(t *testing.T) {
	clock := newFakeClock()
	r := New(Config{Now: clock.Now})
	tests := []struct {
		name        string
		res         Result
		out         int
		wantSuccess bool
		wantTrunc   bool
		wantQueueMs int64
	}{
		{"completed", completed(), 5, true, false, 2000},
		{"completed but truncated", completed(), 11, false, true, 2000},
		{"failed claims success", Result{State: StateFailed, Success: true}, 1, false, false, 2000},
		{"queue wait given", Result{State: StateCompleted, Success: true, QueueWaitMs: 7}, 0, true, false, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := r.Create(Meta{MaxOutputBytes: 10})
			clock.Advance(2 * time.Second)
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			e.Write(Stdout, []byte(strings.Repeat("a", tt.out)))
			e.Write(Stderr, []byte("err"))
			if !e.Finish(tt.res) {
				t.Fatal("Finish = false")
			}
			got, _ := e.Result()
			if got.Success != tt.wantSuccess || got.StdoutTruncated != tt.wantTrunc || got.StderrTruncated {
				t.Errorf("success %v stdoutTrunc %v stderrTrunc %v", got.Success, got.StdoutTruncated, got.StderrTruncated)
			}
			if got.StdoutBytes != int64(tt.out) || got.StderrBytes != 3 {
				t.Errorf("bytes %d/%d, want %d/3", got.StdoutBytes, got.StderrBytes, tt.out)
			}
			if got.QueueWaitMs != tt.wantQueueMs {
				t.Errorf("QueueWaitMs = %d, want %d", got.QueueWaitMs, tt.wantQueueMs)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(e *Execution, calls *atomic.Int32)
		wantState State
		wantErr   error
		wantCalls int32
		wantFinal State
	}{
		{
			name:      "pending without runner",
			setup:     func(*Execution, *atomic.Int32) {},
			wantState: StateCancelled, wantFinal: StateCancelled,
		},
		{
			name: "pending with cancel func",
			setup: func(e *Execution, calls *atomic.Int32) {
				e.SetCancel(func() {
					calls.Add(1)
					e.Finish(Result{State: StateCancelled, Reason: ReasonCancelled})
				})
			},
			wantState: StateCancelled, wantCalls: 1, wantFinal: StateCancelled,
		},
		{
			name: "running, runner finishes synchronously",
			setup: func(e *Execution, calls *atomic.Int32) {
				_ = e.Start()
				e.SetCancel(func() {
					calls.Add(1)
					e.Finish(Result{State: StateCancelled, Reason: ReasonCancelled})
				})
			},
			wantState: StateCancelled, wantCalls: 1, wantFinal: StateCancelled,
		},
		{
			name: "running, runner finishes later",
			setup: func(e *Execution, calls *atomic.Int32) {
				_ = e.Start()
				e.SetCancel(func() { calls.Add(1) })
			},
			wantState: StateRunning, wantCalls: 1, wantFinal: StateRunning,
		},
		{
			name:      "running, cancel func not yet set",
			setup:     func(e *Execution, _ *atomic.Int32) { _ = e.Start() },
			wantState: StateRunning, wantCalls: 0, wantFinal: StateRunning,
		},
		{
			name: "terminal",
			setup: func(e *Execution, calls *atomic.Int32) {
				e.SetCancel(func() { calls.Add(1) })
				e.Finish(completed())
			},
			wantState: StateCompleted, wantErr: ErrTerminal, wantFinal: StateCompleted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, 0)
			var calls atomic.Int32
			tt.setup(e, &calls)
			st, err := e.Cancel()
			if st != tt.wantState || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Cancel() = %v, %v; want %v, %v", st, err, tt.wantState, tt.wantErr)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("cancel func called %d times, want %d", got, tt.wantCalls)
			}
			if got := e.State(); got != tt.wantFinal {
				t.Errorf("state = %v, want %v", got, tt.wantFinal)
			}
		})
	}
}

func TestCancelBeforeSetCancelAndOnce(t *testing.T) {
	e := newExec(t, 0)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Cancel(); st != StateRunning || err != nil {
		t.Fatalf("Cancel() = %v, %v", st, err)
	}
	var calls atomic.Int32
	e.SetCancel(func() { calls.Add(1) })
	if got := calls.Load(); got != 1 {
		t.Fatalf("SetCancel after Cancel called func %d times, want 1", got)
	}
	if _, err := e.Cancel(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("second Cancel called func again: %d calls", got)
	}
}

func TestCancelledPendingCannotStart(t *testing.T) {
	e := newExec(t, 0)
	if _, err := e.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); !errors.Is(err, ErrTerminal) {
		t.Fatalf("Start after cancel = %v, want ErrTerminal", err)
	}
	res, _ := e.Result()
	if res.Reason != ReasonCancelled || res.Success {
		t.Errorf("result = %+v", res)
	}
}

func TestWait(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		e := newExec(t, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := e.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("finished elsewhere", func(t *testing.T) {
		e := newExec(t, 0)
		var wg sync.WaitGroup
		wg.Go(func() { e.Finish(Result{State: StateFailed, ExitCode: 3}) })
		res, err := e.Wait(context.Background())
		wg.Wait()
		if err != nil || res.State != StateFailed || res.ExitCode != 3 {
			t.Fatalf("Wait = %+v, %v", res, err)
		}
	})
}

func TestPreview(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "console.log(1)", "console.log(1)"},
		{"ascii cut", strings.Repeat("a", 150), strings.Repeat("a", 100)},
		{"multibyte cut", strings.Repeat("€", 101), strings.Repeat("€", 100)},
		{"4-byte cut", "x" + strings.Repeat("😀", 120), "x" + strings.Repeat("😀", 99)},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	}
	r := New(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Create(Meta{CodePreview: tt.in}).Info().CodePreview; got != tt.want {
				t.Errorf("preview = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriterAndWriteAfterFinish(t *testing.T) {
	e := newExec(t, 0)
	w := e.Writer(Stderr)
	if n, err := w.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	e.Finish(completed())
	if _, err := w.Write([]byte("late")); !errors.Is(err, ErrTerminal) {
		t.Fatalf("Write after finish = %v, want ErrTerminal", err)
	}
	e.Write(Stderr, []byte("late"))
	if got, next, _ := mustRead(t, e, Stderr, 0); got != "abc" || next != 3 {
		t.Errorf("stderr = %q next %d, want %q 3", got, next, "abc")
	}
}

func TestOnOutputLimit(t *testing.T) {
	var mu sync.Mutex
	var got []Stream
	r := New(Config{})
	e := r.Create(Meta{MaxOutputBytes: 4, OnOutputLimit: func(s Stream) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}})
	e.Write(Stdout, []byte("1234"))
	e.Write(Stderr, []byte("123456"))
	e.Write(Stdout, []byte("5"))
	e.Write(Stdout, []byte("6"))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != Stderr || got[1] != Stdout {
		t.Fatalf("OnOutputLimit calls = %v, want [stderr stdout]", got)
	}
}

// TestOnFinish: the hook gets the result as published (the registry's
// fields set) exactly once, before a waiter can see it, whichever way the
// execution ends.
func TestOnFinish(t *testing.T) {
	r := New(Config{})
	for _, end := range []string{"finish", "cancel before start"} {
		var got []Result
		var e *Execution
		var seenDone bool
		e = r.Create(Meta{MaxOutputBytes: 4, OnFinish: func(res Result) {
			got = append(got, res)
			select {
			case <-e.Done():
				seenDone = true
			default:
			}
		}})
		switch end {
		case "finish":
			_ = e.Start()
			e.Write(Stdout, []byte("123456"))
			e.Finish(Result{State: StateCompleted, Reason: ReasonExited, Success: true})
			e.Finish(Result{State: StateFailed})
		default:
			if _, err := e.Cancel(); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 1 || seenDone {
			t.Fatalf("%s: OnFinish called %d times, after Done: %v", end, len(got), seenDone)
		}
		res, _ := e.Result()
		if got[0].State != res.State || got[0].StdoutTruncated != res.StdoutTruncated || got[0].StdoutBytes != res.StdoutBytes || got[0].Success != res.Success {
			t.Fatalf("%s: OnFinish got %+v, published %+v", end, got[0], res)
		}
	}
}
