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
	budget = max(budget, MinOutputChars)
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
	k := max(0, allowance-markerLen(n))
	for k+1 < n && k+1+markerLen(n-k-1) <= allowance {
		k++
	}
	head := k / 2
	tail := k - head
	r := []rune(s)
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
