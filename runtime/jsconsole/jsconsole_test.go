package jsconsole

import (
	"strings"
	"testing"
)

// TestRecordsRoundTrip: records written by Append come back from a
// Parser as ProDisco renders them, whatever the chunking of the channel.
func TestRecordsRoundTrip(t *testing.T) {
	var ch []byte
	ch = Append(ch, Log, "plain")
	ch = Append(ch, Info, "fyi")
	ch = Append(ch, Warn, "careful")
	ch = Append(ch, Error, "bad\nworse")
	ch = Append(ch, Stderr, "raw err")
	ch = Append(ch, Thrown, "boom")
	ch = Append(ch, Log, "é \u2028 \"q\" \\ 😀")
	want := []Line{
		{Text: "plain"}, {Text: "[INFO] fyi"}, {Text: "[WARN] careful"},
		{Text: "[ERROR] bad\nworse", Error: true}, {Text: "raw err", Error: true},
		{Text: "é \u2028 \"q\" \\ 😀"},
	}
	for _, step := range []int{1, 3, 7, len(ch)} {
		var p Parser
		var got []Line
		for b := ch; len(b) > 0; {
			n := min(step, len(b))
			got = append(got, p.Write(b[:n])...)
			b = b[n:]
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d lines %+v, want %+v", step, len(got), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("step %d: line %d = %+v, want %+v", step, i, got[i], want[i])
			}
		}
		if msg, ok := p.Thrown(); !ok || msg != "boom" {
			t.Errorf("step %d: Thrown = %q, %v", step, msg, ok)
		}
	}
	if got := Join(want[:3]); got != "plain\n[INFO] fyi\n[WARN] careful" {
		t.Errorf("Join = %q", got)
	}
	if Join(nil) != "" {
		t.Error("Join(nil) != \"\"")
	}
}

// TestCaps: the line past MaxLines or MaxChars and every later one are
// dropped, as ProDisco's executor drops them; the thrown message still
// comes through, cut to MaxThrownChars; a record longer than
// MaxRecordBytes is skipped without holding it, and the next one reads.
func TestCaps(t *testing.T) {
	var p Parser
	var ch []byte
	for range MaxLines {
		ch = Append(ch, Log, "x")
	}
	ch = Append(ch, Log, "one too many")
	ch = Append(ch, Thrown, strings.Repeat("m", MaxThrownChars+10))
	lines := p.Write(ch)
	if len(lines) != MaxLines || !p.Truncated() {
		t.Fatalf("%d lines, truncated %v; want %d, true", len(lines), p.Truncated(), MaxLines)
	}
	if msg, _ := p.Thrown(); len(msg) != MaxThrownChars {
		t.Errorf("thrown message of %d bytes, want %d", len(msg), MaxThrownChars)
	}

	var c Counter
	if !c.Admit(Log, strings.Repeat("a", MaxChars-9)) || !c.Admit(Warn, "😀") || c.Admit(Log, "b") || c.Admit(Log, "") {
		t.Error("Counter: the chars cap counts UTF-16 code units and holds once reached")
	}

	var q Parser
	first := q.Write(Append(nil, Log, "before"))
	long := Append(nil, Log, strings.Repeat("\x01", MaxChars+1)) // \u0001: 6 bytes each
	for _, chunk := range [][]byte{long[:len(long)/2], long[len(long)/2 : len(long)-1]} {
		if got := q.Write(chunk); len(got) != 0 {
			t.Fatal("part of a record made a line")
		}
		if len(q.pending) > MaxRecordBytes {
			t.Fatalf("holding %d bytes, cap %d", len(q.pending), MaxRecordBytes)
		}
	}
	got := q.Write(append(long[len(long)-1:], append(Append(nil, Warn, "after"), Append(nil, Thrown, "boom")...)...))
	if len(first) != 1 || len(got) != 0 || !q.Truncated() {
		t.Fatalf("around an oversized line: %+v then %+v, truncated %v; want the line before only", first, got, q.Truncated())
	}
	if msg, _ := q.Thrown(); msg != "boom" {
		t.Fatalf("Thrown after an oversized line = %q", msg)
	}
}

// TestMalformedRecords are dropped; a second Thrown is ignored.
func TestMalformedRecords(t *testing.T) {
	var p Parser
	got := p.Write([]byte("Z\"unknown kind\"\nL not json\n\nL\"ok\"\nX\"first\"\nX\"second\"\n"))
	if len(got) != 1 || got[0].Text != "ok" {
		t.Fatalf("lines %+v, want only ok", got)
	}
	if msg, _ := p.Thrown(); msg != "first" {
		t.Errorf("Thrown = %q, want the first", msg)
	}
}

// TestInvalidUTF8: invalid bytes a program writes in a record, or gives
// Append, become one U+FFFD per run (package utf8text's rule), not one
// per byte as encoding/json would make them.
func TestInvalidUTF8(t *testing.T) {
	const want = "a\uFFFDb\uFFFDc"
	var p Parser
	got := p.Write([]byte("L\"a\xff\xfeb\xe2\x82c\"\n"))
	if len(got) != 1 || got[0].Text != want {
		t.Errorf("written record: lines %+v, want one %q", got, want)
	}
	got = p.Write(Append(nil, Log, "a\xff\xfeb\xe2\x82c"))
	if len(got) != 1 || got[0].Text != want {
		t.Errorf("Append: lines %+v, want one %q", got, want)
	}
}

// FuzzParser: whatever a program writes on its channel, in whatever
// chunks, the kept lines fit the caps and the parser holds at most
// MaxRecordBytes.
func FuzzParser(f *testing.F) {
	f.Add([]byte("L\"a\"\nE\"b\"\nX\"c\"\n"), 3)
	f.Add([]byte("W\"\\u00e9\"\ne\"\"\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, step int) {
		if step <= 0 {
			step = 1
		}
		var p Parser
		lines, chars := 0, 0
		for len(b) > 0 {
			k := min(step, len(b))
			for _, l := range p.Write(b[:k]) {
				lines++
				chars += Units(l.Text)
			}
			b = b[k:]
			if len(p.pending) > MaxRecordBytes {
				t.Fatalf("pending %d > %d", len(p.pending), MaxRecordBytes)
			}
		}
		if lines > MaxLines || chars > MaxChars {
			t.Fatalf("%d lines, %d chars kept: past the caps", lines, chars)
		}
		if msg, _ := p.Thrown(); Units(msg) > MaxThrownChars {
			t.Fatalf("thrown message of %d units", Units(msg))
		}
	})
}
