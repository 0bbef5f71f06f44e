package testresult

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"regexp"
	"slices"
	"strings"
)

// Lockdown is the JavaScript that freezes the intrinsics in test mode
// (lockdown.js): an expression whose value is a function of further objects
// to freeze. Both runtimes call it once the harness and uvu/assert exist,
// before the code under test runs.
//
//go:embed lockdown.js
var Lockdown string

// NonceBytes is the length of a run's nonce in bytes of randomness; its
// text is twice as long (hex).
const NonceBytes = 16

// NewNonce returns a fresh random nonce for one test run.
func NewNonce() string {
	b := make([]byte, NonceBytes)
	if _, err := rand.Read(b); err != nil {
		panic("testresult: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// ErrBadPayload is returned by DecodePayload for a program that does not
// start with a nonce line.
var ErrBadPayload = errors.New("testresult: test-mode program without its nonce line")

// EncodePayload is what a runtime in test mode reads on fd 3: the run's
// nonce on a line of its own, then the program (Assemble's). The runtime
// starts every line it writes on the results channel with the nonce and a
// space; the code under test, which cannot read fd 3 (the runtime reads
// it whole and closes it before the code runs) nor the harness' closures,
// cannot write a line the reader takes (Authenticate).
func EncodePayload(nonce, program string) []byte {
	b := make([]byte, 0, len(nonce)+1+len(program))
	b = append(b, nonce...)
	b = append(b, '\n')
	return append(b, program...)
}

// DecodePayload splits EncodePayload's output.
func DecodePayload(b []byte) (nonce, program string, err error) {
	i := bytes.IndexByte(b, '\n')
	if i != 2*NonceBytes {
		return "", "", ErrBadPayload
	}
	if _, err := hex.DecodeString(string(b[:i])); err != nil {
		return "", "", ErrBadPayload
	}
	return string(b[:i]), string(b[i+1:]), nil
}

// PayloadNonce is the nonce of a test-mode program, "" when it has none.
func PayloadNonce(b []byte) string {
	n, _, err := DecodePayload(b[:min(len(b), 2*NonceBytes+1)])
	if err != nil {
		return ""
	}
	return n
}

// forgedLine is what Authenticate puts in place of the first line that did
// not carry the nonce; Parse marks the Summary Forged.
const forgedLine = `{"forged":true}` + "\n"

// Authenticate returns the results channel b as Parse reads it: the lines
// that start with nonce and a space, without them, up to the first
// non-empty line that does not, which becomes a line telling Parse that
// something other than the harness wrote on the channel; nothing after it
// is kept. A final line without its newline (the channel was cut) is kept
// when it carries the nonce.
func Authenticate(b []byte, nonce string) []byte {
	prefix := []byte(nonce + " ")
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if nonce == "" || !bytes.HasPrefix(line, prefix) {
			return append(out, forgedLine...)
		}
		out = append(out, line[len(prefix):]...)
	}
	return out
}

// MaxModuleNames bounds the names the code's module object offers the
// tests (Assemble); longer names are never offered.
const (
	MaxModuleNames    = 10000
	maxModuleNameLen  = 128
	identifierPattern = `[\p{L}\p{Nl}$_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$_\x{200C}\x{200D}]*`
)

var identifier = regexp.MustCompile(identifierPattern)

// notBindable are words that cannot be read as a variable in strict code
// (reserved words, and names a getter should not read).
var notBindable = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`await break case catch class const continue debugger default delete do
		else enum export extends false finally for function if import in instanceof new null return
		super switch this throw true try typeof var void while with yield let static implements
		interface package private protected public arguments eval`) {
		notBindable[w] = true
	}
}

// ModuleNames returns the names the code's module object offers to tests
// whose source is tests: every identifier in it (an import can only name
// what the tests' text holds), in order of first appearance, at most
// MaxModuleNames.
func ModuleNames(tests string) []string {
	seen := map[string]bool{}
	var names []string
	for _, m := range identifier.FindAllString(tests, -1) {
		if len(names) >= MaxModuleNames {
			break
		}
		if len(m) > maxModuleNameLen || notBindable[m] || seen[m] {
			continue
		}
		seen[m] = true
		names = append(names, m)
	}
	return names
}

// Assemble joins the code under test and the tests into one program body
// for the harness (harness.js): code is the code's body, transformed; the
// tests' body follows in a function of its own, whose parameters test,
// assert and require the harness binds, so that whatever the code declares
// cannot shadow them; and the body returns [codeModule, testsFunction]
// once the code's top level has finished. The tests see the code's
// top-level declarations (as if it came first in one file), and an import
// or require of any relative path ("./add") in them gets codeModule,
// whose property NAME (for each of names, ModuleNames of the tests) is the
// code's top-level binding NAME. The result needs the runtime's async
// wrapper around it.
func Assemble(code, tests string, names []string) string {
	var b strings.Builder
	b.Grow(len(code) + len(tests) + 32*len(names) + 128)
	b.WriteString(code)
	b.WriteString("\n;return [{ __proto__: null")
	for _, n := range slices.Clip(names) {
		b.WriteString(", get ")
		b.WriteString(n)
		b.WriteString("() { return ")
		b.WriteString(n)
		b.WriteString("; }")
	}
	// The tests' body is a function of its own inside, so that it may
	// declare test, assert or require itself (const { test } = require("uvu")).
	b.WriteString(" }, function (test, assert, require) { return (async () => {\n")
	b.WriteString(tests)
	b.WriteString("\n})(); }];\n")
	return b.String()
}
