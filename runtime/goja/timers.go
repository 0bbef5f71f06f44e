package goja

import (
	"container/heap"
	"fmt"
	"math"
	"time"

	gojavm "github.com/dop251/goja"
)

// maxTimerDelayMs is the largest delay Node accepts (2^31-1 ms); larger or
// invalid delays become 1 ms, as in Node.
const maxTimerDelayMs = math.MaxInt32

// scheduler runs timers and immediates in Node's order: timers by due time,
// then creation order; each loop turn runs the due timers, then the
// immediates queued before the turn. It drives the event loop through a
// single wake-up timer of goja_nodejs' setTimeout, which keeps the loop
// alive while armed and fires on the loop goroutine.
type scheduler struct {
	r          *runner
	heap       timerHeap
	byID       map[int64]*timer
	immediates []*timer
	nextID     int64
	seq        uint64
	// refs counts pending timers that keep the loop alive (not unref'd).
	refs int

	arm, disarm gojavm.Callable // goja_nodejs setTimeout and clearTimeout
	wake        gojavm.Value    // the Go callback given to arm
	armed       gojavm.Value    // the wake-up timer, nil when none
	armedAt     time.Time
	stopped     bool
}

type timer struct {
	id       int64
	when     time.Time
	seq      uint64
	fn       gojavm.Callable
	args     []gojavm.Value
	interval time.Duration // > 0 for setInterval
	// vdue is when it is due on a deterministic run's clock (0 on a run
	// with the real clock); it orders timers before when does, so that
	// the order does not depend on how long code took between them.
	vdue      time.Duration
	immediate bool
	ref       bool
	cancelled bool
	index     int // in heap; -1 when not queued
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].vdue != h[j].vdue {
		return h[i].vdue < h[j].vdue
	}
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) { t := x.(*timer); t.index = len(*h); *h = append(*h, t) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// installTimers replaces goja_nodejs' timer globals with the scheduler's and
// adds queueMicrotask.
func (r *runner) installTimers() error {
	vm := r.vm
	g := vm.GlobalObject()
	arm, ok1 := gojavm.AssertFunction(g.Get("setTimeout"))
	disarm, ok2 := gojavm.AssertFunction(g.Get("clearTimeout"))
	if !ok1 || !ok2 {
		return fmt.Errorf("install timers: event loop provides no setTimeout")
	}
	s := &scheduler{r: r, byID: map[int64]*timer{}, arm: arm, disarm: disarm}
	s.wake = vm.ToValue(func(gojavm.FunctionCall) gojavm.Value {
		s.armed = nil
		s.turn()
		return gojavm.Undefined()
	})
	r.timers = s

	set := map[string]func(gojavm.FunctionCall) gojavm.Value{
		"setTimeout":     func(c gojavm.FunctionCall) gojavm.Value { return s.add(c, false, false) },
		"setInterval":    func(c gojavm.FunctionCall) gojavm.Value { return s.add(c, true, false) },
		"setImmediate":   func(c gojavm.FunctionCall) gojavm.Value { return s.add(c, false, true) },
		"clearTimeout":   s.clear,
		"clearInterval":  s.clear,
		"clearImmediate": s.clear,
		"queueMicrotask": s.queueMicrotask,
	}
	for name, fn := range set {
		if err := g.Set(name, fn); err != nil {
			return fmt.Errorf("install %s: %w", name, err)
		}
	}
	return nil
}

// add implements setTimeout(fn, delay, ...args), setInterval and
// setImmediate(fn, ...args). It returns a Timeout object whose primitive
// value is its id, with ref, unref, hasRef and refresh like Node's.
func (s *scheduler) add(c gojavm.FunctionCall, repeat, immediate bool) gojavm.Value {
	vm := s.r.vm
	fn, ok := gojavm.AssertFunction(c.Argument(0))
	if !ok {
		panic(vm.NewTypeError(`The "callback" argument must be of type function. Received %s`, s.r.inspectValue(c.Argument(0))))
	}
	s.nextID++
	s.seq++
	t := &timer{id: s.nextID, seq: s.seq, fn: fn, ref: true, immediate: immediate, index: -1}
	argStart := 2
	if immediate {
		argStart = 1
	} else {
		t.interval = delayOf(c.Argument(1))
		t.when = time.Now().Add(t.interval)
		t.vdue = s.virtualDue(t.interval)
		if !repeat {
			t.interval = 0
		}
	}
	if len(c.Arguments) > argStart {
		t.args = append([]gojavm.Value(nil), c.Arguments[argStart:]...)
	}
	s.byID[t.id] = t
	s.refs++
	if immediate {
		s.immediates = append(s.immediates, t)
	} else {
		heap.Push(&s.heap, t)
	}
	s.rearm()
	return s.handle(t)
}

// delayOf converts a JS delay in milliseconds the way Node does.
func delayOf(v gojavm.Value) time.Duration {
	ms := 1.0
	if v != nil && !gojavm.IsUndefined(v) {
		ms = v.ToFloat()
	}
	if math.IsNaN(ms) || ms < 1 || ms > maxTimerDelayMs {
		ms = 1
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// virtualDue is when a timer set now with delay d is due on a
// deterministic run's clock; 0 on a run with the real clock.
func (s *scheduler) virtualDue(d time.Duration) time.Duration {
	if !s.r.deterministic {
		return 0
	}
	return s.r.virtual + d
}

// handle builds the Timeout (or Immediate) object returned to JS.
func (s *scheduler) handle(t *timer) gojavm.Value {
	vm := s.r.vm
	o := vm.NewObject()
	self := func(c gojavm.FunctionCall) gojavm.Value { return c.This }
	_ = o.Set("ref", func(c gojavm.FunctionCall) gojavm.Value { s.setRef(t, true); return self(c) })
	_ = o.Set("unref", func(c gojavm.FunctionCall) gojavm.Value { s.setRef(t, false); return self(c) })
	_ = o.Set("hasRef", func() bool { return t.ref })
	_ = o.Set("refresh", func(c gojavm.FunctionCall) gojavm.Value {
		if !t.cancelled && !t.immediate && t.index >= 0 {
			d := t.interval
			if d == 0 {
				d = max(time.Until(t.when), 0)
			}
			t.when = time.Now().Add(d)
			t.vdue = s.virtualDue(d)
			heap.Fix(&s.heap, t.index)
			s.rearm()
		}
		return self(c)
	})
	_ = o.SetSymbol(gojavm.SymToPrimitive, func() int64 { return t.id })
	return o
}

func (s *scheduler) setRef(t *timer, ref bool) {
	if t.cancelled || t.ref == ref {
		return
	}
	t.ref = ref
	if ref {
		s.refs++
	} else {
		s.refs--
	}
	s.rearm()
}

// clear implements clearTimeout, clearInterval and clearImmediate: they
// accept a handle or its numeric id, and ignore anything else.
func (s *scheduler) clear(c gojavm.FunctionCall) gojavm.Value {
	v := c.Argument(0)
	if gojavm.IsUndefined(v) || gojavm.IsNull(v) {
		return gojavm.Undefined()
	}
	if t, ok := s.byID[v.ToInteger()]; ok {
		s.cancel(t)
		s.rearm()
	}
	return gojavm.Undefined()
}

func (s *scheduler) cancel(t *timer) {
	if t.cancelled {
		return
	}
	t.cancelled = true
	delete(s.byID, t.id)
	if t.ref {
		s.refs--
	}
	if t.index >= 0 {
		heap.Remove(&s.heap, t.index)
	}
}

// queueMicrotask(fn) runs fn as a promise job.
func (s *scheduler) queueMicrotask(c gojavm.FunctionCall) gojavm.Value {
	vm := s.r.vm
	fn, ok := gojavm.AssertFunction(c.Argument(0))
	if !ok {
		panic(vm.NewTypeError(`The "callback" argument must be of type function. Received %s`, s.r.inspectValue(c.Argument(0))))
	}
	p, resolve, _ := vm.NewPromise()
	then, _ := gojavm.AssertFunction(vm.ToValue(p).ToObject(vm).Get("then"))
	cb := vm.ToValue(func(gojavm.FunctionCall) gojavm.Value {
		if _, err := fn(gojavm.Undefined()); err != nil {
			panic(err)
		}
		return gojavm.Undefined()
	})
	if _, err := then(vm.ToValue(p), cb); err != nil {
		panic(err)
	}
	_ = resolve(gojavm.Undefined())
	return gojavm.Undefined()
}

// turn is one event loop turn: the due timers, then the immediates queued
// before the turn started, each as its own task.
func (s *scheduler) turn() {
	now := time.Now()
	for len(s.heap) > 0 && !s.stopped {
		t := s.heap[0]
		if t.when.After(now) {
			break
		}
		heap.Pop(&s.heap)
		if t.vdue > s.r.virtual {
			// A deterministic run's clock moves only here: to when the
			// timer was due.
			s.r.virtual = t.vdue
		}
		if t.interval > 0 {
			t.when = time.Now().Add(t.interval)
			t.vdue = s.virtualDue(t.interval)
			s.seq++
			t.seq = s.seq
			heap.Push(&s.heap, t)
		} else {
			s.forget(t)
		}
		s.run(t)
	}
	batch := s.immediates
	s.immediates = nil
	for i, t := range batch {
		if s.stopped {
			break
		}
		if t.cancelled {
			continue
		}
		s.forget(t)
		s.run(t)
		batch[i] = nil
	}
	s.rearm()
	s.flushIfIdle()
}

// flushIfIdle flushes output when the loop is about to wait for a timer, so
// that a program printing on a timer streams in real time.
func (s *scheduler) flushIfIdle() {
	if s.armed == nil || time.Until(s.armedAt) > 0 {
		s.r.stdout.Flush()
		s.r.stderr.Flush()
		if s.r.console != nil {
			s.r.console.Flush()
		}
	}
}

// forget drops a one-shot timer that is about to run.
func (s *scheduler) forget(t *timer) {
	t.cancelled = true
	delete(s.byID, t.id)
	if t.ref {
		s.refs--
	}
}

// run calls t's callback as a task; goja drains the microtask queue when the
// call returns, before endTask looks for unhandled rejections.
func (s *scheduler) run(t *timer) {
	_, err := t.fn(gojavm.Undefined(), t.args...)
	s.r.endTask(err)
}

// rearm points the wake-up timer at the next thing to run, or disarms it
// when nothing that keeps the loop alive is pending.
func (s *scheduler) rearm() {
	if s.stopped {
		return
	}
	var at time.Time
	switch {
	case s.refs == 0:
		s.disarmWake()
		return
	case len(s.immediates) > 0:
		at = time.Now()
	case len(s.heap) > 0:
		at = s.heap[0].when
	default:
		s.disarmWake()
		return
	}
	if s.armed != nil && !s.armedAt.After(at) {
		return
	}
	s.disarmWake()
	ms := int64(0)
	if d := time.Until(at); d > 0 {
		ms = int64((d + time.Millisecond - 1) / time.Millisecond)
	}
	v, err := s.arm(gojavm.Undefined(), s.wake, s.r.vm.ToValue(ms))
	if err != nil {
		panic(err)
	}
	s.armed, s.armedAt = v, at
}

func (s *scheduler) disarmWake() {
	if s.armed == nil {
		return
	}
	_, _ = s.disarm(gojavm.Undefined(), s.armed)
	s.armed = nil
}

// stop disarms the scheduler for good: no further callback runs.
func (s *scheduler) stop() {
	s.stopped = true
	s.disarmWake()
}
