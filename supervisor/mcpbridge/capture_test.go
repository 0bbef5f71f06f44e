package mcpbridge

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// captured feeds s to a Capture of budget in chunks cut at the offsets
// cuts gives (which may split code points) and closes it.
func captured(s string, budget int, cuts func(int) int) *Capture {
	c := NewCapture(budget)
	b := []byte(s)
	for len(b) > 0 {
		n := min(max(cuts(len(b)), 1), len(b))
		_, _ = c.Write(b[:n])
		b = b[n:]
	}
	c.Close()
	return c
}

// TestCaptureIsBudgetOfTheWholeStream: whatever the chunking, a Capture's
// budgeted streams are Budget's of the whole strings, byte for byte, with
// the same totals and flags: one rule, whether the output is held whole
// (runSandbox) or streamed (execute_command).
func TestCaptureIsBudgetOfTheWholeStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "é", "€", "😀", "\n", "\xff", "\xe2\x82", "\xf0\x9f", "z\x80"}
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 300 {
		stdout, stderr := gen(rng.IntN(2000)), gen(rng.IntN(700))
		budget := MinOutputChars + rng.IntN(1500)
		if i%10 == 0 {
			budget = MinOutputChars
		}
		cuts := func(left int) int { return 1 + rng.IntN(min(left, 64)) }
		wantO, wantE := Budget(stdout, stderr, budget)
		gotO, gotE := BudgetCaptures(captured(stdout, budget, cuts), captured(stderr, budget, cuts), budget)
		if gotO != wantO || gotE != wantE {
			t.Fatalf("budget %d, %d and %d bytes:\ncapture %+v / %+v\nbudget  %+v / %+v", budget, len(stdout), len(stderr), gotO, gotE, wantO, wantE)
		}
	}
}

// TestCaptureOneReplacementPerRun: a Capture gives each run of invalid
// bytes one U+FFFD (package utf8text's rule, as the supervisor's replies
// and Budget do), however the chunks cut the run or a character, and the
// text it budgets is valid UTF-8 before the JSON encoder sees it (which
// would replace each invalid byte).
func TestCaptureOneReplacementPerRun(t *testing.T) {
	const in, want = "a\xff\xfeb\xe2\x82c€\xf0\x9f", "a\uFFFDb\uFFFDc€\uFFFD"
	for _, size := range []int{1, 2, 3, len(in)} {
		c := captured(in, 0, func(int) int { return size })
		o, _ := BudgetCaptures(c, NewCapture(0), MinOutputChars)
		if o.Text != want || o.TotalChars != utf8.RuneCountInString(want) {
			t.Errorf("chunks of %d bytes: %q (%d chars), want %q", size, o.Text, o.TotalChars, want)
		}
	}
	if o, _ := Budget(in, "", MinOutputChars); o.Text != want {
		t.Errorf("Budget: %q, want %q", o.Text, want)
	}
}

// TestCaptureMemoryIsBounded: 10 MB through a Capture of the default
// budget keeps at most twice the budget in code points.
func TestCaptureMemoryIsBounded(t *testing.T) {
	c := NewCapture(DefaultOutputChars)
	chunk := []byte(strings.Repeat("0123456789", 1000))
	for range 1000 {
		_, _ = c.Write(chunk)
	}
	c.Close()
	if c.chars() != 10_000_000 || len(c.head)+len(c.ring) > 2*DefaultOutputChars || cap(c.head)+cap(c.ring) > 4*DefaultOutputChars {
		t.Fatalf("%d chars, holding %d (+%d)", c.chars(), len(c.head), len(c.ring))
	}
	o, _ := BudgetCaptures(c, NewCapture(0), DefaultOutputChars)
	if !o.Truncated || o.TotalChars != 10_000_000 || !strings.HasPrefix(o.Text, "0123456789") || !strings.HasSuffix(o.Text, "0123456789") {
		t.Fatalf("budgeted: %d chars, truncated %v", o.TotalChars, o.Truncated)
	}
}

// TestCaptureWithAGapIsBudgetOfTheWholeStream: a stream whose middle
// was dropped (Skip) is budgeted as the whole stream: the same totals
// and, when the excerpts the rule keeps lie within what was received,
// the same text; otherwise all that was received around a marker of the
// rest, within the budget.
func TestCaptureWithAGapIsBudgetOfTheWholeStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	same := 0
	for range 500 {
		s := pattern(200 + rng.IntN(5000))
		limit := 2 + rng.IntN(len(s)-2)
		budget := MinOutputChars + rng.IntN(3000)
		h := limit / 2
		c := NewCapture(budget)
		c.WriteString(s[:h])
		c.Skip(int64(len(s) - limit))
		c.WriteString(s[len(s)-(limit-h):])
		c.Close()
		got, _ := BudgetCaptures(c, NewCapture(budget), budget)
		want, _ := Budget(s, "", budget)
		if got.TotalChars != len(s) || !got.Truncated || utf8.RuneCountInString(got.Text) > budget {
			t.Fatalf("%d chars, limit %d, budget %d: total %d, truncated %v, %d chars", len(s), limit, budget, got.TotalChars, got.Truncated, len(got.Text))
		}
		// The rule's excerpts of the whole stream, when it cuts it.
		if i, j := strings.Index(want.Text, "\n[... "), strings.LastIndex(want.Text, " ...]\n"); i >= 0 && i <= h && len(want.Text)-(j+len(" ...]\n")) <= limit-h {
			same++
			if got != want {
				t.Fatalf("%d chars, limit %d, budget %d:\n got %q\nwant %q", len(s), limit, budget, got.Text, want.Text)
			}
		}
		if !strings.Contains(got.Text, " characters omitted ...]") {
			t.Fatalf("no marker: %q", got.Text)
		}
	}
	if same < 50 {
		t.Errorf("only %d of 500 streams compared whole", same)
	}
}
