package mcpbridge

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/execfarm/execfarm/internal/utf8text"
)

// Output budget of a tool result, from the agent-sandbox MCP server's
// execute_command: max_output_chars, default 30000, between 128 and
// 300000 characters (Unicode code points).
const (
	DefaultOutputChars = 30_000
	MinOutputChars     = 128
	MaxOutputChars     = 300_000
)

// Budgeted is one stream after Budget: its text, its length in code
// points before, and whether anything was omitted.
type Budgeted struct {
	Text       string
	TotalChars int
	Truncated  bool
}

// Budget fits stdout and stderr into budget code points together, by the
// rule of agent-sandbox's MCP server: the streams start with half each (stderr gets the odd
// character) and a stream that needs less leaves the rest to the other;
// short output is unchanged; an oversized stream keeps equal beginning and
// end excerpts (the end gets at most one character more) around
// "\n[... N characters omitted ...]\n", whose characters count toward the
// budget. budget below MinOutputChars is taken as MinOutputChars, which
// leaves room for a marker in both streams.
func Budget(stdout, stderr string, budget int) (Budgeted, Budgeted) {
	return split(newStringText(stdout), newStringText(stderr), max(budget, MinOutputChars))
}

// text is one stream's output as the budget reads it: its length in code
// points and runs of its code points. A string is one (stringText); so is
// a Capture, which holds only the beginning and end a budget can keep.
type text interface {
	// chars is the length in code points.
	chars() int
	// slice returns code points [from, to). A Capture of budget b answers
	// for ranges within its first or last b code points, the only ones
	// fit asks for with an allowance of at most b.
	slice(from, to int) string
	// known says which code points are known: all (gapped false), or
	// the first prefix and the last suffix around bytes never received.
	known() (prefix, suffix int, gapped bool)
}

// stringText is a whole string as a text, valid UTF-8 (newStringText).
type stringText struct {
	s       string
	n       int
	counted bool
	runes   []rune // s's, once a slice needs them
}

// newStringText returns s as a text, made valid UTF-8 by package
// utf8text's rule (a run of invalid bytes is one U+FFFD), as a Capture
// decodes: the JSON encoder then never sees invalid UTF-8, which it would
// replace byte by byte.
func newStringText(s string) *stringText {
	return &stringText{s: utf8text.String(s)}
}

func (t *stringText) chars() int {
	if !t.counted {
		t.n, t.counted = utf8.RuneCountInString(t.s), true
	}
	return t.n
}

func (t *stringText) known() (int, int, bool) { return t.chars(), 0, false }

func (t *stringText) slice(from, to int) string {
	if from == 0 && to == t.chars() {
		return t.s
	}
	if t.runes == nil {
		t.runes = []rune(t.s)
	}
	return string(t.runes[from:to])
}

// split is Budget without the minimum, for what is left of a budget.
func split(stdout, stderr text, budget int) (Budgeted, Budgeted) {
	budget = max(budget, 0)
	lo, le := stdout.chars(), stderr.chars()
	ao, ae := budget/2, budget-budget/2
	switch {
	case lo+le <= budget:
		ao, ae = lo, le
	case lo <= ao:
		ao, ae = lo, budget-lo
	case le <= ae:
		ao, ae = budget-le, le
	}
	return fit(stdout, ao), fit(stderr, ae)
}

// fit cuts t to at most allowance code points. A text with gaps (a
// Capture that skipped bytes) is cut as the whole stream would be, its
// marker counting the bytes it never received; its excerpts come from
// the received beginning and end, and when they cannot be as long as the
// rule wants (the allowance exceeds what was received), they are what
// was received, around a marker of the rest.
func fit(t text, allowance int) Budgeted {
	n := t.chars()
	prefix, suffix, gapped := t.known()
	if !gapped && n <= allowance {
		return Budgeted{Text: t.slice(0, n), TotalChars: n}
	}
	// The most kept characters k with k + len(marker(n-k)) <=
	// allowance; the marker only gets shorter as k grows.
	if allowance < markerLen(n) {
		// No room for the marker (a budget's small remainder): the
		// beginning only; Truncated says the rest is gone.
		return Budgeted{Text: t.slice(0, min(allowance, prefix)), TotalChars: n, Truncated: true}
	}
	most := n - 1 // what can be kept: not all, or it would fit
	if gapped {
		most = prefix + suffix
	}
	k := min(allowance-markerLen(n), most)
	for k+1 <= most && k+1+markerLen(n-k-1) <= allowance {
		k++
	}
	head := k / 2
	tail := k - head
	if gapped {
		if head > prefix {
			head, tail = prefix, k-prefix
		}
		if tail > suffix {
			head, tail = k-suffix, suffix
		}
	}
	var b strings.Builder
	b.WriteString(t.slice(0, head))
	b.WriteString(marker(n - k))
	b.WriteString(t.slice(n-tail, n))
	return Budgeted{Text: b.String(), TotalChars: n, Truncated: true}
}

func marker(omitted int) string {
	return "\n[... " + strconv.Itoa(omitted) + " characters omitted ...]\n"
}

func markerLen(omitted int) int { return len(marker(omitted)) } // ASCII: bytes are code points

// maxTestError bounds one test's error text in a result, characters.
const maxTestError = 1000

// testCost is what one test result costs besides its name and error, in
// characters: about its JSON ({"name":"","passed":false,"durationMs":0}),
// so that thousands of tests with empty names do not pass for free.
const testCost = 40

// budgetTests keeps test results within allowance characters (names and
// errors in code points, plus testCost each), failed tests first, each error cut to
// maxTestError around the omission marker. It returns the kept results,
// the characters they use and how many were left out.
func budgetTests(tests []TestResult, allowance int) (kept []TestResult, used, omitted int) {
	ordered := make([]TestResult, 0, len(tests))
	for _, failed := range []bool{true, false} {
		for _, t := range tests {
			if (!t.Passed && !t.Skipped) == failed {
				ordered = append(ordered, t)
			}
		}
	}
	kept = []TestResult{}
	for i, t := range ordered {
		e := fit(newStringText(t.Error), maxTestError)
		t.Error = e.Text
		cost := testCost + utf8.RuneCountInString(t.Name) + utf8.RuneCountInString(t.Error)
		if used+cost > allowance {
			return kept, used, len(ordered) - i
		}
		used += cost
		kept = append(kept, t)
	}
	return kept, used, 0
}
