package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// collect drains a subscription and returns its output events and result.
func collect(t *testing.T, seq iter.Seq2[Event, error]) ([]Event, *Result, error) {
	t.Helper()
	var evs []Event
	var res *Result
	for ev, err := range seq {
		if err != nil {
			return evs, res, err
		}
		if res != nil {
			t.Fatal("event after the result")
		}
		if ev.Result != nil {
			res = ev.Result
			continue
		}
		evs = append(evs, ev)
	}
	return evs, res, nil
}

// checkContiguous verifies that per stream, events do not overlap or repeat
// and leave no hole unless marked Gap; it returns the bytes per stream.
func checkContiguous(t *testing.T, evs []Event) [2][]byte {
	t.Helper()
	var next [2]int64
	var out [2][]byte
	for i, ev := range evs {
		s := ev.Stream
		if len(ev.Data) == 0 {
			t.Errorf("event %d: empty data", i)
		}
		if ev.Offset < next[s] || (ev.Offset != next[s] && !ev.Gap) {
			t.Errorf("event %d: %v offset %d, expected %d (gap %v)", i, s, ev.Offset, next[s], ev.Gap)
		}
		next[s] = ev.Offset + int64(len(ev.Data))
		out[s] = append(out[s], ev.Data...)
	}
	return out
}

func TestSubscribeOrderAndResult(t *testing.T) {
	tests := []struct {
		name   string
		writes int
	}{
		{"none", 0},
		{"few", 7},
		{"many", 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, 0)
			var want [2]bytes.Buffer
			var wg sync.WaitGroup
			wg.Go(func() {
				_ = e.Start()
				for i := range tt.writes {
					s := Stream(i % 3 % 2) // out, err, out, out, err, out...
					tok := fmt.Sprintf("%d;", i)
					want[s].WriteString(tok)
					e.Write(s, []byte(tok))
				}
				e.Finish(Result{State: StateFailed, ExitCode: 2})
			})
			evs, res, err := collect(t, e.Subscribe(context.Background()))
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if res == nil || res.State != StateFailed || res.ExitCode != 2 {
				t.Fatalf("result = %+v", res)
			}
			got := checkContiguous(t, evs)
			for s := range got {
				if string(got[s]) != want[s].String() {
					t.Errorf("%v = %q, want %q", Stream(s), got[s], want[s].String())
				}
			}
			// Write order across streams is kept: tokens increase.
			last := -1
			for _, ev := range evs {
				for _, tok := range strings.Split(strings.TrimSuffix(string(ev.Data), ";"), ";") {
					n, err := strconv.Atoi(tok)
					if err != nil {
						t.Fatalf("token %q: %v", tok, err)
					}
					if n != last+1 {
						t.Fatalf("token %d after %d", n, last)
					}
					last = n
				}
			}
			if last != tt.writes-1 {
				t.Errorf("last token %d, want %d", last, tt.writes-1)
			}
		})
	}
}

func TestSubscribeUTF8ByteByByte(t *testing.T) {
	e := newExec(t, 0)
	text := "a€😀é"
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range len(text) {
			e.Write(Stdout, []byte{text[i]})
			e.Write(Stderr, []byte{text[i]})
		}
		e.Finish(completed())
	})
	evs, res, err := collect(t, e.Subscribe(context.Background()))
	wg.Wait()
	if err != nil || res == nil {
		t.Fatalf("subscription: %v, result %v", err, res)
	}
	for i, ev := range evs {
		if !utf8.Valid(ev.Data) {
			t.Errorf("event %d splits a rune: %q", i, ev.Data)
		}
	}
	got := checkContiguous(t, evs)
	if string(got[Stdout]) != text || string(got[Stderr]) != text {
		t.Errorf("got %q / %q, want %q", got[Stdout], got[Stderr], text)
	}
}

func TestSubscribeSlowDoesNotBlockWriter(t *testing.T) {
	const capBytes = 1024
	e := newExec(t, capBytes)
	next, stop := iter.Pull2(e.Subscribe(context.Background()))
	defer stop()
	e.Write(Stdout, []byte("first"))
	ev, err, ok := next()
	if !ok || err != nil || string(ev.Data) != "first" {
		t.Fatalf("first event = %+v, %v, %v", ev, err, ok)
	}
	// The subscriber is parked; the writer pushes 4 MiB and finishes without
	// waiting for it.
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 64 {
		e.Write(Stdout, chunk)
	}
	e.Write(Stdout, []byte("END"))
	e.Finish(completed())
	total := int64(5 + 64*len(chunk) + 3)

	var evs []Event
	var res *Result
	for {
		ev, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Result != nil {
			res = ev.Result
			continue
		}
		evs = append(evs, ev)
	}
	if res == nil || !res.StdoutTruncated || res.StdoutBytes != total {
		t.Fatalf("result = %+v", res)
	}
	all := append([]Event{{Stream: Stdout, Data: []byte("first")}}, evs...)
	got := checkContiguous(t, all)
	if len(got[Stdout]) != capBytes {
		t.Errorf("delivered %d bytes, want the %d kept", len(got[Stdout]), capBytes)
	}
	lastEv := evs[len(evs)-1]
	if !lastEv.Gap || lastEv.Offset != total-capBytes/2 || !bytes.HasSuffix(lastEv.Data, []byte("xEND")) {
		t.Errorf("tail event: gap %v offset %d, want gap at %d ending in END", lastEv.Gap, lastEv.Offset, total-capBytes/2)
	}
}

func TestSubscribeBehindSegmentLog(t *testing.T) {
	r := New(Config{})
	r.segLimit = 4
	e := r.Create(Meta{})
	next, stop := iter.Pull2(e.Subscribe(context.Background()))
	defer stop()
	e.Write(Stdout, []byte("o0;"))
	if ev, _, _ := next(); string(ev.Data) != "o0;" {
		t.Fatalf("first event %q", ev.Data)
	}
	var want [2]string
	want[Stdout] = "o0;"
	for i := 1; i < 40; i++ {
		s := Stream(i % 2)
		tok := fmt.Sprintf("%c%d;", "oe"[s], i)
		want[s] += tok
		e.Write(s, []byte(tok))
	}
	e.Finish(completed())
	evs := []Event{{Stream: Stdout, Data: []byte("o0;")}}
	for {
		ev, err, ok := next()
		if !ok || err != nil || ev.Result != nil {
			break
		}
		evs = append(evs, ev)
	}
	got := checkContiguous(t, evs)
	for s := range got {
		if string(got[s]) != want[s] {
			t.Errorf("%v = %q, want %q", Stream(s), got[s], want[s])
		}
	}
	if n := len(e.log.segs); n > 2*4 {
		t.Errorf("segment log holds %d segments, limit 8", n)
	}
}

func TestSubscribeContextDone(t *testing.T) {
	e := newExec(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var evs []Event
	var err error
	wg.Go(func() { evs, _, err = collect(t, e.Subscribe(ctx)) })
	e.Write(Stdout, []byte("x"))
	cancel()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
	if len(evs) > 1 {
		t.Errorf("got %d events, want at most 1", len(evs))
	}
}

func TestSubscribeAfterFinish(t *testing.T) {
	e := newExec(t, 4)
	e.Write(Stdout, []byte("abcdefgh"))
	e.Write(Stderr, []byte("E"))
	e.Finish(completed())
	evs, res, err := collect(t, e.Subscribe(context.Background()))
	if err != nil || res == nil {
		t.Fatalf("err %v result %v", err, res)
	}
	got := checkContiguous(t, evs)
	if string(got[Stdout]) != "abgh" || string(got[Stderr]) != "E" {
		t.Errorf("got %q / %q", got[Stdout], got[Stderr])
	}
	if len(evs) != 3 || !evs[1].Gap || evs[1].Offset != 6 || evs[2].Stream != Stderr {
		t.Errorf("events = %+v", evs)
	}
}

func TestSubscribeGapWithoutTailData(t *testing.T) {
	// cap 2 keeps "0" as head and the last byte as tail. The tail byte is a
	// continuation byte whose lead was dropped, so it is skipped; the gap must
	// then be reported on the next event of the stream.
	e := newExec(t, 2)
	next, stop := iter.Pull2(e.Subscribe(context.Background()))
	defer stop()
	e.Write(Stdout, []byte("000\x82"))
	ev, err, _ := next()
	if err != nil || string(ev.Data) != "0" || ev.Gap {
		t.Fatalf("first event = %+v, %v", ev, err)
	}
	e.Write(Stdout, []byte("y"))
	ev, err, _ = next()
	if err != nil || string(ev.Data) != "y" || !ev.Gap || ev.Offset != 4 {
		t.Fatalf("second event = %+v, %v; want y at 4 with gap", ev, err)
	}
}

// TestSubscribeEventsAreBounded: a subscriber to an execution that keeps
// megabytes gets them in events of at most MaxEventBytes, in write order,
// every byte once.
func TestSubscribeEventsAreBounded(t *testing.T) {
	r := New(Config{})
	e := r.Create(Meta{MaxOutputBytes: 8 << 20})
	var want [2]strings.Builder
	for i := range 6 {
		s := Stream(i % 2)
		chunk := strings.Repeat(string(rune('a'+i)), 700<<10+i)
		e.Write(s, []byte(chunk))
		want[s].WriteString(chunk)
	}
	e.Finish(completed())
	var got [2]strings.Builder
	var order []Stream
	for ev, err := range e.Subscribe(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Result != nil {
			break
		}
		if len(ev.Data) > MaxEventBytes {
			t.Fatalf("event of %d bytes, more than %d", len(ev.Data), MaxEventBytes)
		}
		if int64(got[ev.Stream].Len()) != ev.Offset {
			t.Fatalf("event at offset %d, want %d", ev.Offset, got[ev.Stream].Len())
		}
		got[ev.Stream].Write(ev.Data)
		if len(order) == 0 || order[len(order)-1] != ev.Stream {
			order = append(order, ev.Stream)
		}
	}
	for s := range got {
		if got[s].String() != want[s].String() {
			t.Fatalf("%v: got %d bytes, want %d", Stream(s), got[s].Len(), want[s].Len())
		}
	}
	if len(order) != 6 {
		t.Fatalf("streams came in %d runs %v, want the 6 writes' order", len(order), order)
	}
}

// TestReadPage: pages of at most the size asked for, across the dropped
// middle of a truncated stream, join into what Read returns whole.
func TestReadPage(t *testing.T) {
	r := New(Config{})
	e := r.Create(Meta{MaxOutputBytes: 1000})
	e.Write(Stdout, []byte(strings.Repeat("h", 600)+strings.Repeat("m", 5000)+strings.Repeat("t", 600)))
	if p, _ := e.ReadPage(Stdout, 6200, 128); !p.More {
		t.Fatal("a running execution's page at the end says no more may come")
	}
	e.Finish(completed())
	var paged []byte
	var off, dropped int64
	for pages := 0; ; pages++ {
		p, err := e.ReadPage(Stdout, off, 128)
		d, next, more := p.Data(), p.Next, p.More
		if err != nil || len(d) > 128 || pages > 20 {
			t.Fatalf("ReadPage(%d): %d bytes, %v, page %d", off, len(d), err, pages)
		}
		if p.Dropped == 0 && len(p.Tail) > 0 {
			t.Fatalf("ReadPage(%d): a tail without dropped bytes", off)
		}
		paged = append(paged, d...)
		off, dropped = next, dropped+p.Dropped
		if !more {
			break
		}
	}
	whole, _, _, _ := e.Read(Stdout, 0)
	if string(paged) != string(whole) || off != 6200 {
		t.Fatalf("pages joined = %d bytes ending at %d, Read = %d bytes", len(paged), off, len(whole))
	}
	if st := e.Output(Stdout); dropped != st.DroppedBytes || dropped == 0 {
		t.Errorf("pages report %d dropped bytes, the stream %d", dropped, st.DroppedBytes)
	}

	// One page across the gap: the head's bytes, then the tail's, and the
	// count between them.
	p, err := e.ReadPage(Stdout, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Trim(string(p.Head), "h") != "" || strings.Trim(string(p.Tail), "t") != "" ||
		int64(len(p.Head)+len(p.Tail))+p.Dropped != 6200 || p.Dropped != e.Output(Stdout).DroppedBytes {
		t.Errorf("page from 0: head %d bytes, %d dropped, tail %d bytes (%q...)", len(p.Head), p.Dropped, len(p.Tail), p.Data()[:8])
	}
	// A page that starts among the dropped bytes: no head, the count from
	// the offset to the tail.
	if p, _ := e.ReadPage(Stdout, 3000, 4096); len(p.Head) != 0 || p.Dropped != 6200-int64(len(p.Tail))-3000 {
		t.Errorf("page from 3000: head %d bytes, %d dropped, tail %d bytes", len(p.Head), p.Dropped, len(p.Tail))
	}
}
