// Package quote quotes a client's field in an error message without
// echoing it whole: a request may carry an id, a name or a path of up to
// its method's request limit, and an answer that repeats it would hold
// (and send) as much again.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// MaxBytes is how much of a field Q quotes.
const MaxBytes = 128

// Q returns s quoted as strconv.Quote does, cut to its first MaxBytes
// bytes (at a character's start) with the field's length after it when
// longer: "abc…"... (4194304 bytes).
func Q(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
