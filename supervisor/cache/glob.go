package cache

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// isGlob reports whether a List filter is a glob pattern rather than a
// substring.
func isGlob(filter string) bool {
	return strings.ContainsAny(filter, "*?[")
}

// checkGlob reports a malformed pattern before any matching, so a bad
// filter is an error even when the cache is empty.
func checkGlob(pattern string) error {
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '\\':
			if i+1 == len(pattern) {
				return fmt.Errorf("%w: pattern %s ends in an escape", ErrInvalidFilter, quote(pattern))
			}
			_, n := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + n
		case '[':
			_, n, err := matchClass(pattern[i:], 0)
			if err != nil {
				return fmt.Errorf("pattern %s: %w", quote(pattern), err)
			}
			i += n
		default:
			i++
		}
	}
	return nil
}

// globMatch reports whether the whole of s matches pattern. The syntax is
// path.Match's ('*' any run of characters, '?' one character, '[...]' a
// class with ranges, negated by '^' or '!', '\' escapes) except that '*' and
// '?' also match '/', since descriptions are free text. pattern must have
// passed checkGlob. The backtracking is bounded: O(len(pattern)*len(s)).
func globMatch(pattern, s string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					_, n := utf8.DecodeRuneInString(s[sx:])
					px, sx = px+1, sx+n
					continue
				}
			case '[':
				if sx < len(s) {
					r, n := utf8.DecodeRuneInString(s[sx:])
					ok, w, err := matchClass(pattern[px:], r)
					if err == nil && ok {
						px, sx = px+w, sx+n
						continue
					}
				}
			default:
				lit := pattern[px:]
				w := 0
				if c == '\\' && len(lit) > 1 {
					lit, w = lit[1:], 1
				}
				_, n := utf8.DecodeRuneInString(lit)
				if strings.HasPrefix(s[sx:], lit[:n]) {
					px, sx = px+w+n, sx+n
					continue
				}
			}
		}
		// Mismatch: let the last '*' swallow one more character.
		if starPx >= 0 && starSx < len(s) {
			_, n := utf8.DecodeRuneInString(s[starSx:])
			starSx += n
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the class at the start of p (p[0] == '[')
// and returns the width of the class in p.
func matchClass(p string, r rune) (matched bool, width int, err error) {
	i := 1
	negated := false
	if i < len(p) && (p[i] == '^' || p[i] == '!') {
		negated = true
		i++
	}
	for nrange := 0; ; nrange++ {
		if i < len(p) && p[i] == ']' && nrange > 0 {
			return matched != negated, i + 1, nil
		}
		lo, n, err := classChar(p[i:])
		if err != nil {
			return false, 0, err
		}
		i += n
		hi := lo
		if i < len(p) && p[i] == '-' {
			if hi, n, err = classChar(p[i+1:]); err != nil {
				return false, 0, err
			}
			i += 1 + n
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
}

// classChar reads one possibly escaped character of a class.
func classChar(p string) (r rune, width int, err error) {
	if p == "" || p[0] == '-' || p[0] == ']' {
		return 0, 0, fmt.Errorf("%w: malformed character class", ErrInvalidFilter)
	}
	if p[0] == '\\' {
		if len(p) == 1 {
			return 0, 0, fmt.Errorf("%w: malformed character class", ErrInvalidFilter)
		}
		r, n := utf8.DecodeRuneInString(p[1:])
		return r, 1 + n, nil
	}
	r, n := utf8.DecodeRuneInString(p)
	return r, n, nil
}
