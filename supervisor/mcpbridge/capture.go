package mcpbridge

import (
	"math"

	"github.com/execfarm/execfarm/internal/utf8text"
)

// Capture reads one output stream in chunks and keeps what the output
// budget (Budget's rule) can use of it: its length in code points, and
// its first and last budget code points. Its memory is bounded by the
// budget whatever the stream's size: 2 × budget code points, plus at most
// three bytes of a code point split across chunks. Bytes decode as
// Budget's strings do, by package utf8text's rule: a run of invalid bytes
// is one U+FFFD, also when chunks cut it.
//
// Bytes of the stream the reader never received (the sandbox's output
// limit dropped them from its middle, or they lie past a reply's page)
// are a gap (Skip): each counts one code point in the stream's length,
// and the stream is then budgeted as it would be whole, its omission
// marker counting them; its beginning and end excerpts are taken only
// from what was received on either side of the gaps (the beginning
// before the first, the end after the last), so that no excerpt runs
// across a gap silently. This is the one rule of every tool's output
// (runSandbox's modes and execute_command alike).
type Capture struct {
	budget  int
	n       int    // code points so far, skipped bytes included
	head    []rune // the first up to budget, before any gap
	ring    []rune // the last up to budget received past head (after the last gap, once there is one)
	ringPos int    // index in ring of the oldest code point, once ring is full
	gapped  bool   // a gap has been skipped: head is closed
	dec     utf8text.Decoder
}

// NewCapture returns a Capture for a budget of budget code points
// (taken as at least MinOutputChars, at most MaxOutputChars).
func NewCapture(budget int) *Capture {
	return &Capture{budget: min(max(budget, MinOutputChars), MaxOutputChars)}
}

// Write adds p to the stream. It never fails.
func (c *Capture) Write(p []byte) (int, error) {
	for _, r := range c.dec.Decode(p) {
		c.add(r)
	}
	return len(p), nil
}

// WriteString adds s to the stream.
func (c *Capture) WriteString(s string) {
	_, _ = c.Write([]byte(s))
}

// Skip adds a gap of n bytes the reader never received (n <= 0: none):
// they count one code point each, and what was received before them is
// no longer adjacent to what follows. A code point the bytes before the
// gap left incomplete is one U+FFFD.
func (c *Capture) Skip(n int64) {
	if n <= 0 {
		return
	}
	for _, r := range c.dec.Flush() {
		c.add(r)
	}
	c.n += int(min(n, int64(math.MaxInt32)))
	c.gapped = true
	c.ring, c.ringPos = c.ring[:0], 0
}

// SkipTo adds a gap up to byte offset at of the stream, when the bytes
// received so far (have) end before it, and sets have to at: the gap of a
// chunk that carries its offset in the stream.
func (c *Capture) SkipTo(have *int64, at int64) {
	if at > *have {
		c.Skip(at - *have)
		*have = at
	}
}

// Close ends the stream: the start of a code point it never completed
// is one U+FFFD (none when it goes on a run of invalid bytes).
func (c *Capture) Close() {
	for _, r := range c.dec.Flush() {
		c.add(r)
	}
}

func (c *Capture) add(r rune) {
	c.n++
	if !c.gapped && len(c.head) < c.budget {
		c.head = append(c.head, r)
		return
	}
	if len(c.ring) < c.budget {
		c.ring = append(c.ring, r)
		return
	}
	c.ring[c.ringPos] = r
	c.ringPos = (c.ringPos + 1) % len(c.ring)
}

func (c *Capture) chars() int { return c.n }

func (c *Capture) known() (prefix, suffix int, gapped bool) {
	if !c.gapped {
		return c.n, 0, false
	}
	return len(c.head), len(c.ring), true
}

// slice returns code points [from, to) from head and ring: ring holds
// [n-len(ring), n).
func (c *Capture) slice(from, to int) string {
	out := make([]rune, 0, to-from)
	for i := from; i < to; i++ {
		switch {
		case i < len(c.head):
			out = append(out, c.head[i])
		default:
			j := i - (c.n - len(c.ring)) // index in ring order, oldest first
			if j < 0 {
				// Outside what a budget asks for (see text.slice).
				continue
			}
			out = append(out, c.ring[(c.ringPos+j)%len(c.ring)])
		}
	}
	return string(out)
}

// BudgetCaptures is Budget for two Captures (each closed), whose budgets
// must be at least budget.
func BudgetCaptures(stdout, stderr *Capture, budget int) (Budgeted, Budgeted) {
	return split(stdout, stderr, max(budget, MinOutputChars))
}

// receivedText returns the Capture of a stream of written bytes of which
// a reply carried s, with dropped bytes between s[:gapIndex] and
// s[gapIndex:] (dropped 0: none); the bytes neither s nor the gap
// accounts for lie past s (beyond a reply's first page). A gapIndex
// outside s is taken as its end.
func receivedText(s string, gapIndex, dropped, written int64, budget int) *Capture {
	c := NewCapture(budget)
	rest := written - int64(len(s)) - max(dropped, 0)
	if dropped > 0 {
		i := int(min(max(gapIndex, 0), int64(len(s))))
		c.WriteString(s[:i])
		c.Skip(dropped)
		s = s[i:]
	}
	c.WriteString(s)
	c.Skip(rest)
	c.Close()
	return c
}
