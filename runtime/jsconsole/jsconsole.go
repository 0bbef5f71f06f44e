package jsconsole

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/execfarm/execfarm/internal/utf8text"
)

// FD is the file descriptor on which a JavaScript runtime process writes
// its console records (the worker's RunRequest.console pipe).
const FD = 6

// EnvFD names the environment variable that gives the goja runtime its
// channel's descriptor (node reads it from its prelude's configuration).
const EnvFD = "EXECFARM_CONSOLE_FD"

// Kind says what a record is: a console line of some level, or the
// message of the error that ended the program.
type Kind byte

// Kinds of records. The letters are the wire's.
const (
	// Log is console.log, console.debug and the other stdout methods
	// (dir, table, count, time*, group*), and a write to process.stdout:
	// no prefix.
	Log Kind = 'L'
	// Info is console.info: "[INFO] ".
	Info Kind = 'I'
	// Warn is console.warn: "[WARN] "; not an error line (ProDisco).
	Warn Kind = 'W'
	// Error is console.error, console.trace and console.assert:
	// "[ERROR] ", an error line.
	Error Kind = 'E'
	// Stderr is a write to process.stderr: an error line without prefix
	// (ProDisco).
	Stderr Kind = 'e'
	// Thrown is the message of the uncaught exception or unhandled
	// rejection that ended the program: an Error's message, anything
	// else as String(value). Not a console line.
	Thrown Kind = 'X'
)

// Caps (package documentation).
const (
	// MaxLines is how many console lines are kept (ProDisco's
	// MAX_OUTPUT_LINES).
	MaxLines = 5000
	// MaxChars is how many characters the kept lines hold together, in
	// UTF-16 code units with their prefixes (ProDisco's MAX_OUTPUT_CHARS).
	MaxChars = 500_000
	// MaxThrownChars caps the thrown error's message, in UTF-16 code
	// units; a longer one is cut.
	MaxThrownChars = 16 << 10
	// MaxRecordBytes is the longest record a Parser holds while it is
	// unfinished: the longest line that fits MaxChars, every code unit
	// escaped (\uXXXX), plus the kind and the quotes. A longer record
	// cannot be kept and is skipped.
	MaxRecordBytes = 6*MaxChars + 8
)

// prefix returns the text ProDisco puts before a line of kind k.
func prefix(k Kind) string {
	switch k {
	case Info:
		return "[INFO] "
	case Warn:
		return "[WARN] "
	case Error:
		return "[ERROR] "
	}
	return ""
}

// isLine reports whether k is a console line's kind.
func isLine(k Kind) bool {
	switch k {
	case Log, Info, Warn, Error, Stderr:
		return true
	}
	return false
}

// Line is one console line as ProDisco renders it.
type Line struct {
	// Text is the line with its prefix ("[ERROR] boom"), without a
	// trailing newline; it may hold newlines of its own (console.log of a
	// string with newlines is one line).
	Text string
	// Error marks a line that ProDisco streams as error output
	// (console.error, console.trace, console.assert, process.stderr).
	Error bool
}

// Render returns the line that a record of kind k with text makes.
func Render(k Kind, text string) Line {
	return Line{Text: prefix(k) + text, Error: k == Error || k == Stderr}
}

// Join is ProDisco's output field: the lines' texts joined by "\n", with
// no trailing newline.
func Join(lines []Line) string {
	n := 0
	for _, l := range lines {
		n += len(l.Text) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.Text)
	}
	return b.String()
}

// Units returns the length of s in UTF-16 code units, as JavaScript's
// String.length counts it.
func Units(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Counter applies the caps to a program's lines in order: a writer asks
// it before sending a line, a reader before keeping one. The zero value
// is ready.
type Counter struct {
	lines, chars int
	full         bool
}

// Admit reports whether the line of kind k with text is kept: false for
// the line that would pass MaxLines or MaxChars (counted with its prefix)
// and for every line after it.
func (c *Counter) Admit(k Kind, text string) bool {
	if c.full {
		return false
	}
	n := Units(prefix(k)) + Units(text)
	if c.lines >= MaxLines || c.chars+n > MaxChars {
		c.full = true
		return false
	}
	c.lines++
	c.chars += n
	return true
}

// Full reports whether a line was refused: every later one is too.
func (c *Counter) Full() bool { return c.full }

// Append appends the record of kind k with text to dst. Invalid UTF-8 in
// text becomes U+FFFD by package utf8text's rule (a run is one).
func Append(dst []byte, k Kind, text string) []byte {
	dst = append(dst, byte(k))
	b, _ := json.Marshal(utf8text.String(text)) // a string always marshals
	dst = append(dst, b...)
	return append(dst, '\n')
}

// Parser reads a console channel incrementally and applies the caps. It
// is not safe for concurrent use.
type Parser struct {
	count    Counter
	pending  []byte // an unfinished record
	skipping bool   // dropping a record longer than MaxRecordBytes
	thrown   string
	hasThrow bool
}

// Write takes the next bytes of the channel and returns the console lines
// they complete that are kept. Malformed records are dropped.
func (p *Parser) Write(b []byte) []Line {
	var out []Line
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !p.skipping {
				if len(p.pending)+len(b) > MaxRecordBytes {
					p.skip(b)
				} else {
					p.pending = append(p.pending, b...)
				}
			}
			return out
		}
		rec := b[:i]
		b = b[i+1:]
		if p.skipping {
			p.skipping = false
			continue
		}
		if len(p.pending) > 0 {
			if len(p.pending)+len(rec) > MaxRecordBytes {
				p.skip(rec)
				p.skipping = false
				continue
			}
			rec = append(p.pending, rec...)
			p.pending = p.pending[:0]
		}
		if l, ok := p.record(rec); ok {
			out = append(out, l)
		}
	}
	return out
}

// skip drops the unfinished record (pending, then b) that is longer than
// MaxRecordBytes. A console line that long is past MaxChars: as for any
// line past the caps, it and every later line are dropped.
func (p *Parser) skip(b []byte) {
	first := b
	if len(p.pending) > 0 {
		first = p.pending
	}
	if isLine(Kind(first[0])) {
		p.count.full = true
	}
	p.pending, p.skipping = nil, true
}

// record handles one complete record.
func (p *Parser) record(rec []byte) (Line, bool) {
	if len(rec) < 3 {
		return Line{}, false
	}
	k := Kind(rec[0])
	switch {
	case k == Thrown:
		if p.hasThrow {
			return Line{}, false // the first one ended the program
		}
	case !isLine(k) || p.count.Full():
		return Line{}, false // after the caps, lines are not even decoded
	}
	// The program may write the channel itself: its invalid UTF-8 is
	// replaced by utf8text's rule (a run is one U+FFFD) before
	// encoding/json, which would replace each invalid byte, reads it.
	body := rec[1:]
	if !utf8.Valid(body) {
		body = []byte(utf8text.Bytes(body))
	}
	var text string
	if json.Unmarshal(body, &text) != nil {
		return Line{}, false
	}
	if k == Thrown {
		p.thrown, p.hasThrow = cutUnits(text, MaxThrownChars), true
		return Line{}, false
	}
	if !p.count.Admit(k, text) {
		return Line{}, false
	}
	return Render(k, text), true
}

// Thrown returns the message of the error that ended the program, and
// whether the program reported one.
func (p *Parser) Thrown() (string, bool) { return p.thrown, p.hasThrow }

// Truncated reports whether lines were dropped by the caps.
func (p *Parser) Truncated() bool { return p.count.Full() }

// cutUnits returns s cut to at most n UTF-16 code units, on a rune
// boundary.
func cutUnits(s string, n int) string {
	units := 0
	for i, r := range s {
		units++
		if r >= 0x10000 {
			units++ // a surrogate pair
		}
		if units > n {
			return s[:i]
		}
	}
	return s
}
