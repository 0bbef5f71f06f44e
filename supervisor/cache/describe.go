package cache

import (
	"strings"
	"unicode"

	"github.com/execfarm/execfarm/internal/utf8text"
)

const (
	// MaxDescriptionRunes caps the length of a description, in runes.
	MaxDescriptionRunes = 200
	// DefaultDescription describes code that has no comment and no code line
	// (the reference server's fallback).
	DefaultDescription = "Script execution"
)

// Describe returns the description of code, as the reference server's
// extractDescription does: the text of the first comment line, else the
// first line of code, else DefaultDescription.
//
// Lines are read top-down, blank lines skipped. A "//" line gives its text; a
// "/*" or "/**" block gives the text of its first non-empty line (leading "*"
// removed, stopped at "*/"), so a JSDoc block whose first line is bare "/**"
// gives the line below it (the reference would give "/**"); a "#" line gives
// its text, for shell and Python scripts, and "#!" lines are skipped. Comment
// lines with no text are skipped (the reference would give ""). The result is
// valid UTF-8 on one line: control and space characters become spaces, bidi
// controls are dropped, it is trimmed and cut to MaxDescriptionRunes runes.
func Describe(code string) string {
	code = strings.TrimPrefix(code, "\uFEFF")
	inBlock := false
	for rest := code; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		var text string
		switch {
		case inBlock:
			text, inBlock = blockText(line)
		case line == "":
			continue
		case strings.HasPrefix(line, "//"):
			text = strings.TrimLeft(line, "/")
		case strings.HasPrefix(line, "/*"):
			text, inBlock = blockText(line[2:])
		case strings.HasPrefix(line, "#!"):
			continue
		case strings.HasPrefix(line, "#"):
			text = strings.TrimLeft(line, "#")
		default:
			text = line
		}
		if d := clean(text); d != "" {
			return d
		}
	}
	return DefaultDescription
}

// blockText returns the text of one line inside a block comment and whether
// the block goes on after it.
func blockText(line string) (text string, open bool) {
	text, _, closed := strings.Cut(line, "*/")
	return strings.TrimLeft(strings.TrimSpace(text), "*"), !closed
}

// clean makes s a one-line, valid UTF-8 description of at most
// MaxDescriptionRunes runes.
func clean(s string) string {
	s = utf8text.String(s)
	var b strings.Builder
	n := 0
	for _, r := range s {
		switch {
		case isBidiControl(r):
			continue
		case unicode.IsControl(r) || unicode.IsSpace(r):
			r = ' '
		}
		if n == 0 && r == ' ' {
			continue
		}
		if n == MaxDescriptionRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// isBidiControl reports the characters that reorder displayed text
// (CVE-2021-42574, "Trojan Source"); a description is shown to people.
func isBidiControl(r rune) bool {
	switch {
	case r == '\u061C', r == '\u200E', r == '\u200F':
		return true
	case r >= '\u202A' && r <= '\u202E':
		return true
	case r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}
