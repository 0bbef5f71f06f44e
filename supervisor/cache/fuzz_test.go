package cache

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzFind looks up fuzzed names in a cache holding three scripts, a
// directory and a symlink with cache names, and other files. Find must never
// panic, must fail only with ErrNotFound or ErrAmbiguous, and on success must
// return a cached name directly inside the directory with the code saved
// under it.
func FuzzFind(f *testing.F) {
	for _, s := range []string{"script-2024", "..", "../../etc/passwd", "list-pods.ts", "bbbbbb", "", "\x00", "10-31"} {
		f.Add(s)
	}
	c, es, codes := fixture(f)
	saved := map[string]string{}
	for i, e := range es {
		saved[e.Name] = codes[i]
		f.Add(e.Name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		e, code, err := c.Find(name)
		if err != nil {
			if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("Find(%q) error %v is neither ErrNotFound nor ErrAmbiguous", name, err)
			}
			return
		}
		if _, _, ok := parseName(e.Name); !ok || filepath.Dir(filepath.Join(c.Dir(), e.Name)) != c.Dir() {
			t.Fatalf("Find(%q) returned name %q outside the cache's names", name, e.Name)
		}
		if want, ok := saved[e.Name]; !ok || code != want {
			t.Fatalf("Find(%q) = %q, %q; not a saved script", name, e.Name, code)
		}
		if !validLookup(name) {
			t.Fatalf("Find(%q) succeeded for an invalid name", name)
		}
	})
}

// FuzzDescription checks that Describe never panics and always returns a
// non-empty, trimmed, single-line, valid UTF-8 string of at most
// MaxDescriptionRunes runes without control characters.
func FuzzDescription(f *testing.F) {
	for _, s := range []string{"// a\nb", "/**\n * x\n */", "#!/bin/sh\n# y", "", "\xff\xfe", "/*", "\uFEFF\u202E// z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		d := Describe(code)
		switch {
		case d == "":
			t.Fatalf("Describe(%q) is empty", code)
		case !utf8.ValidString(d):
			t.Fatalf("Describe(%q) = %q is not valid UTF-8", code, d)
		case utf8.RuneCountInString(d) > MaxDescriptionRunes:
			t.Fatalf("Describe(%q) has %d runes", code, utf8.RuneCountInString(d))
		case strings.TrimSpace(d) != d:
			t.Fatalf("Describe(%q) = %q is not trimmed", code, d)
		case strings.IndexFunc(d, func(r rune) bool { return unicode.IsControl(r) || isBidiControl(r) }) >= 0:
			t.Fatalf("Describe(%q) = %q holds a control character", code, d)
		}
	})
}

// FuzzGlob checks that checkGlob and globMatch never panic and that, where
// the two syntaxes agree (no '/', no "[!" negation, valid UTF-8), globMatch
// gives path.Match's answer.
func FuzzGlob(f *testing.F) {
	f.Add("list-*", "list-pods")
	f.Add("[a-c]?*x", "b.zzx")
	f.Add(`\*[^\]]`, "*a")
	f.Add("*a*b*", "xaybz")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		err := checkGlob(pattern)
		if err != nil {
			if !errors.Is(err, ErrInvalidFilter) {
				t.Fatalf("checkGlob(%q) = %v, not ErrInvalidFilter", pattern, err)
			}
			return
		}
		got := globMatch(pattern, s)
		if strings.Contains(pattern+s, "/") || strings.Contains(pattern, "[!") || !utf8.ValidString(pattern+s) {
			return
		}
		want, perr := path.Match(pattern, s)
		if perr != nil {
			return
		}
		if got != want {
			t.Fatalf("globMatch(%q, %q) = %v, path.Match = %v", pattern, s, got, want)
		}
	})
}
