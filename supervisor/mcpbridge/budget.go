package mcpbridge

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Output budget of a tool result, from the agent-sandbox MCP server's
// execute_command (seeds/001): max_output_chars, default 30000, between 128
// and 300000 characters (Unicode code points).
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
// rule of seeds/001: the streams start with half each (stderr gets the odd
// character) and a stream that needs less leaves the rest to the other;
// short output is unchanged; an oversized stream keeps equal beginning and
// end excerpts (the end gets at most one character more) around
// "\n[... N characters omitted ...]\n", whose characters count toward the
// budget. budget below MinOutputChars is taken as MinOutputChars, which
// leaves room for a marker in both streams.
func Budget(stdout, stderr string, budget int) (Budgeted, Budgeted) {
	return split(stdout, stderr, max(budget, MinOutputChars))
}

// split is Budget without the minimum, for what is left of a budget.
func split(stdout, stderr string, budget int) (Budgeted, Budgeted) {
	budget = max(budget, 0)
	lo, le := utf8.RuneCountInString(stdout), utf8.RuneCountInString(stderr)
	ao, ae := budget/2, budget-budget/2
	switch {
	case lo+le <= budget:
		ao, ae = lo, le
	case lo <= ao:
		ao, ae = lo, budget-lo
	case le <= ae:
		ao, ae = budget-le, le
	}
	return fit(stdout, lo, ao), fit(stderr, le, ae)
}

// fit cuts s, n code points long, to at most allowance code points.
func fit(s string, n, allowance int) Budgeted {
	if n <= allowance {
		return Budgeted{Text: s, TotalChars: n}
	}
	// The most kept characters k with k + len(marker(n-k)) <= allowance;
	// the marker only gets shorter as k grows.
	r := []rune(s)
	if allowance < markerLen(n) {
		// No room for the marker (a budget's small remainder): the
		// beginning only; Truncated says the rest is gone.
		return Budgeted{Text: string(r[:allowance]), TotalChars: n, Truncated: true}
	}
	k := allowance - markerLen(n)
	for k+1 < n && k+1+markerLen(n-k-1) <= allowance {
		k++
	}
	head := k / 2
	tail := k - head
	var b strings.Builder
	b.WriteString(string(r[:head]))
	b.WriteString(marker(n - k))
	b.WriteString(string(r[n-tail:]))
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
		e := fit(t.Error, utf8.RuneCountInString(t.Error), maxTestError)
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
