package mcpbridge

import "github.com/execfarm/execfarm/internal/utf8text"

// Capture reads one output stream in chunks and keeps what the output
// budget (Budget's rule) can use of it: its length in code points, and
// its first and last budget code points. Its memory is bounded by the
// budget whatever the stream's size: 2 × budget code points, plus at most
// three bytes of a code point split across chunks. Bytes decode as
// Budget's strings do, by package utf8text's rule: a run of invalid bytes
// is one U+FFFD, also when chunks cut it.
type Capture struct {
	budget  int
	n       int    // code points so far
	head    []rune // the first up to budget
	ring    []rune // the last up to budget of those past head, once head is full
	ringPos int    // index in ring of the oldest code point, once ring is full
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

// Close ends the stream: the start of a code point it never completed
// is one U+FFFD (none when it goes on a run of invalid bytes).
func (c *Capture) Close() {
	for _, r := range c.dec.Flush() {
		c.add(r)
	}
}

func (c *Capture) add(r rune) {
	c.n++
	if len(c.head) < c.budget {
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
