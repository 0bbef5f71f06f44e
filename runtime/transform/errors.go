package transform

import (
	"errors"
	"fmt"
)

var (
	// ErrEmptyCode is returned when the code is empty. Code of only
	// whitespace is not empty: it is a program that does nothing.
	ErrEmptyCode = errors.New("transform: empty code")
	// ErrSyntax is wrapped by every *SyntaxError, so callers can test for any
	// syntax error with errors.Is.
	ErrSyntax = errors.New("transform: syntax error")
)

// SyntaxError describes the first error esbuild reported for the user's code.
type SyntaxError struct {
	// Line is the 1-based line of the error in the user's code; 0 when
	// esbuild gave no location.
	Line int
	// Column is the 1-based column, counted in Unicode code points, of the
	// error on Line; 0 when esbuild gave no location.
	Column int
	// Message is esbuild's message, e.g. `Expected ";" but found "x"`.
	Message string
	// LineText is the full text of the offending source line; empty when
	// esbuild gave no location.
	LineText string
	// More is the number of further errors reported after this one; 0 means
	// this was the only one.
	More int
}

// Error reads like `syntax error at 1:14: Expected ";" but found "x"`.
func (e *SyntaxError) Error() string {
	var s string
	if e.Line > 0 {
		s = fmt.Sprintf("syntax error at %d:%d: %s", e.Line, e.Column, e.Message)
	} else {
		s = "syntax error: " + e.Message
	}
	switch {
	case e.More == 1:
		s += " (and 1 more error)"
	case e.More > 1:
		s += fmt.Sprintf(" (and %d more errors)", e.More)
	}
	return s
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }
