package utf8text

import (
	"strings"
	"unicode/utf8"
)

// Replacement is what stands for one run of invalid bytes: U+FFFD.
const Replacement = "\uFFFD"

// String returns s with each maximal run of invalid UTF-8 replaced by one
// U+FFFD; s itself when it is valid (no copy).
func String(s string) string {
	return strings.ToValidUTF8(s, Replacement)
}

// Bytes returns b as a string by String's rule.
func Bytes(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), Replacement)
}

// Decoder applies String's rule to a stream given in chunks: the
// concatenation of what Decode returns for each chunk and Flush returns
// at the end is String of the chunks joined. A character split between
// two chunks is returned whole with the second (the Decoder holds the at
// most 3 bytes of its start), and a run of invalid bytes cut by a chunk
// boundary is one U+FFFD, in the text of the chunk where the run starts.
// The zero value is ready. A Decoder is not safe for concurrent use.
type Decoder struct {
	pending [utf8.UTFMax]byte // the start of a character the next chunk may complete
	n       int               // bytes in pending, < utf8.UTFMax
	inRun   bool              // the last byte decoded was invalid: a run goes on
}

// Decode returns the text of p after what earlier calls were given:
// everything up to the start of a character p leaves incomplete, which is
// held for the next call.
func (d *Decoder) Decode(p []byte) string {
	if d.n == 0 && utf8.Valid(p) {
		if len(p) > 0 {
			d.inRun = false
		}
		return string(p)
	}
	in := p
	if d.n > 0 {
		in = append(d.pending[:d.n:d.n], p...)
		d.n = 0
	}
	out := make([]byte, 0, len(in)+len(Replacement))
	for i := 0; i < len(in); {
		if !utf8.FullRune(in[i:]) {
			d.n = copy(d.pending[:], in[i:])
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		if r == utf8.RuneError && size == 1 {
			if !d.inRun {
				out = append(out, Replacement...)
			}
			d.inRun = true
		} else {
			out = append(out, in[i:i+size]...)
			d.inRun = false
		}
		i += size
	}
	return string(out)
}

// Cut ends a chunk where the caller knows no character straddles the
// cut (a reader that cuts chunks on character boundaries, as
// package registry's do): held bytes, a character the chunk left
// incomplete, are one U+FFFD (none when they go on a run of invalid
// bytes), and a run of invalid bytes that goes on in the next chunk stays
// one U+FFFD, in this chunk's text.
func (d *Decoder) Cut() string {
	if d.n == 0 {
		return ""
	}
	s := ""
	if !d.inRun {
		s = Replacement
	}
	d.n, d.inRun = 0, true
	return s
}

// Flush ends the stream, or a part of it that does not go on where it
// stopped (bytes between were dropped): it returns Cut's text and resets
// d to its zero value, so that a run after the gap is a run of its own.
func (d *Decoder) Flush() string {
	s := d.Cut()
	*d = Decoder{}
	return s
}
