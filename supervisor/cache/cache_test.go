package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func sha(code string) string {
	s := sha256.Sum256([]byte(code))
	return hex.EncodeToString(s[:])
}

func TestFileName(t *testing.T) {
	code := "// List pods\nconsole.log(1)\n"
	h := sha(code)[:12]
	tests := []struct {
		name string
		now  time.Time
		want string
	}{
		{"utc", t0, "script-2024-01-15T10-30-00-" + h + ".ts"},
		{"other zone is converted to UTC", t0.In(time.FixedZone("X", -5*3600)), "script-2024-01-15T10-30-00-" + h + ".ts"},
		{"seconds kept, sub-second dropped", time.Date(2025, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "script-2025-12-31T23-59-59-" + h + ".ts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FileName(code, tt.now)
			if got != tt.want {
				t.Fatalf("FileName = %q, want %q", got, tt.want)
			}
			if _, h12, ok := parseName(got); !ok || h12 != h {
				t.Errorf("parseName(%q) = %q, %v; want %q, true", got, h12, ok, h)
			}
			c := openTemp(t)
			e := mustSave(t, c, code, tt.now)
			if e.Name != tt.want {
				t.Errorf("Save name = %q, want %q", e.Name, tt.want)
			}
			if e.ContentHash != sha(code) || e.Description != "List pods" {
				t.Errorf("Save entry = %+v", e)
			}
			if want := tt.now.UTC().Truncate(time.Millisecond); !e.CreatedAt.Equal(want) {
				t.Errorf("CreatedAt = %v, want %v", e.CreatedAt, want)
			}
			content, err := os.ReadFile(filepath.Join(c.Dir(), tt.want))
			if err != nil {
				t.Fatal(err)
			}
			// The reference server's header line, then the code verbatim.
			wantContent := "// Executed via sandbox at " + tt.now.UTC().Format("2006-01-02T15:04:05.000Z") + "\n" + code
			if string(content) != wantContent {
				t.Errorf("file content = %q, want %q", content, wantContent)
			}
		})
	}
}

func TestParseNameRejects(t *testing.T) {
	for _, n := range []string{
		"", "script-2024-01-15T10-30-00-abc123def456", "script-2024-01-15T10-30-00-abc123def456.ts.bak",
		"script-2024-01-15T10-30-00-ABC123DEF456.ts", "script-2024-01-15T10-30-00-abc123def45.ts",
		"script-2024-13-15T10-30-00-abc123def456.ts", "script-2024-01-15 10-30-00-abc123def456.ts",
		"../script-2024-01-15T10-30-00-abc123def456.ts", "list-pods.ts", ".tmp-script-123",
	} {
		if _, _, ok := parseName(n); ok {
			t.Errorf("parseName(%q) accepted", n)
		}
	}
}

func TestOpen(t *testing.T) {
	if _, err := Open(""); !errors.Is(err, ErrInvalidDir) {
		t.Errorf("Open(\"\") = %v, want ErrInvalidDir", err)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if _, err := Open(dir); err != nil {
		t.Fatalf("Open(missing): %v", err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("created dir: %v, %v; want a 0700 directory", fi, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "x")
	if _, err := Open(file); err == nil {
		t.Error("Open(regular file) succeeded")
	}
}

func TestSaveDedup(t *testing.T) {
	c := openTemp(t)
	code := "// same\nconsole.log('x')"
	first := mustSave(t, c, code, t0)
	second, created, err := c.Save(code, t0.Add(time.Hour))
	if err != nil || created {
		t.Fatalf("second Save = created %v, %v; want false, nil", created, err)
	}
	if second != first {
		t.Errorf("second Save entry = %+v, want %+v", second, first)
	}
	if got := dirNames(t, c.Dir()); len(got) != 1 || got[0] != first.Name {
		t.Errorf("dir holds %q, want only %q", got, first.Name)
	}
	// Different code that only differs in whitespace is a different script.
	if e := mustSave(t, c, code+"\n", t0); e.Name == first.Name {
		t.Errorf("code with a trailing newline got the same name %q", e.Name)
	}
}

func TestSaveSize(t *testing.T) {
	c := openTemp(t)
	if _, _, err := c.Save(strings.Repeat("x", MaxScriptBytes+1), t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Save(MaxScriptBytes+1) = %v, want ErrTooLarge", err)
	}
	if got := dirNames(t, c.Dir()); len(got) != 0 {
		t.Errorf("dir after refused Save holds %q", got)
	}
	big := strings.Repeat("y", MaxScriptBytes)
	e := mustSave(t, c, big, t0)
	_, code, err := c.Find(e.Name)
	if err != nil || code != big {
		t.Errorf("Find(max-size script) = %d bytes, %v", len(code), err)
	}
	// A file grown past the limit behind the cache's back is refused.
	writeFile(t, filepath.Join(c.Dir(), e.Name), big+strings.Repeat("z", 4096))
	if _, _, err := c.Find(e.Name); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Find(oversized file) = %v, want ErrTooLarge", err)
	}
}

func TestSaveCollision(t *testing.T) {
	c := openTemp(t)
	code := "console.log(1)"
	// A different script squats the name Save must use.
	writeFile(t, filepath.Join(c.Dir(), FileName(code, t0)), "console.log(2)")
	if _, _, err := c.Save(code, t0); !errors.Is(err, ErrCollision) {
		t.Errorf("Save onto a squatted name = %v, want ErrCollision", err)
	}
	// One second later the name is free.
	mustSave(t, c, code, t0.Add(time.Second))
}

func TestReferenceFileCompat(t *testing.T) {
	c := openTemp(t)
	code := "  // From the reference server\nconsole.log('hi')\n\n"
	name := FileName(code, t0)
	writeFile(t, filepath.Join(c.Dir(), name), "// Executed via sandbox at 2024-01-15T10:30:00.123Z\n"+code)
	e, got, err := c.Find(name)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	want := Entry{Name: name, Description: "From the reference server", ContentHash: sha(code), CreatedAt: t0}
	if got != code || e != want {
		t.Errorf("Find = %+v, %q; want %+v, %q", e, got, want, code)
	}
	if e2, created, err := c.Save(code, t0.Add(time.Minute)); err != nil || created || e2 != want {
		t.Errorf("Save of the same code = %+v, %v, %v; want the reference file's entry", e2, created, err)
	}
	// Without a header the whole file is code and the time is the name's.
	code2 := "plain()"
	name2 := FileName(code2, t0)
	writeFile(t, filepath.Join(c.Dir(), name2), code2)
	e, got, err = c.Find(name2)
	if err != nil || got != code2 || !e.CreatedAt.Equal(t0.Truncate(time.Second)) || e.ContentHash != sha(code2) {
		t.Errorf("Find(headerless) = %+v, %q, %v", e, got, err)
	}
}

// fixture saves three scripts a minute apart and returns them oldest first.
func fixture(t testing.TB) (*Cache, []Entry, []string) {
	t.Helper()
	c := openTemp(t)
	codes := []string{
		"// list-pods: every pod\nk8s.list()",
		"// list-nodes with labels\nk8s.nodes()",
		"/** Watch events */\nwatch()",
	}
	var es []Entry
	for i, code := range codes {
		es = append(es, mustSave(t, c, code, t0.Add(time.Duration(i)*time.Minute)))
	}
	// Things in the directory that are not cached scripts.
	writeFile(t, filepath.Join(c.Dir(), "list-pods.ts"), "not a cached name")
	writeFile(t, filepath.Join(c.Dir(), "README"), "x")
	if err := os.Mkdir(filepath.Join(c.Dir(), "script-2024-01-15T11-00-00-aaaaaaaaaaaa.ts"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "// secret\nsteal()")
	if err := os.Symlink(secret, filepath.Join(c.Dir(), "script-2024-01-15T11-00-01-bbbbbbbbbbbb.ts")); err != nil {
		t.Fatal(err)
	}
	return c, es, codes
}

func TestFind(t *testing.T) {
	c, es, codes := fixture(t)
	tests := []struct {
		name    string
		lookup  string
		want    int // index into es, -1 for an error
		wantErr error
	}{
		{"exact", es[1].Name, 1, nil},
		{"exact without .ts", strings.TrimSuffix(es[2].Name, ".ts"), 2, nil},
		{"partial hash", es[0].ContentHash[:12], 0, nil},
		{"partial is case-insensitive", strings.ToUpper(es[0].ContentHash[:8]), 0, nil},
		{"partial time", "10-31-00", 1, nil},
		{"ambiguous", "script-2024-01-15", -1, ErrAmbiguous},
		{"ambiguous .ts", ".ts", -1, ErrAmbiguous},
		{"not found", "list-pods", -1, ErrNotFound},
		{"non-cache file by exact name", "list-pods.ts", -1, ErrNotFound},
		{"directory with a cache name", "script-2024-01-15T11-00-00-aaaaaaaaaaaa.ts", -1, ErrNotFound},
		{"symlink with a cache name", "script-2024-01-15T11-00-01-bbbbbbbbbbbb", -1, ErrNotFound},
		{"partial of a symlink", "bbbbbb", -1, ErrNotFound},
		{"empty", "", -1, ErrNotFound},
		{"dot dot", "..", -1, ErrNotFound},
		{"parent path", "../" + es[0].Name, -1, ErrNotFound},
		{"absolute path", "/etc/passwd", -1, ErrNotFound},
		{"sub path", "x/" + es[0].Name, -1, ErrNotFound},
		{"backslash", `..\` + es[0].Name, -1, ErrNotFound},
		{"nul", es[0].Name + "\x00", -1, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, code, err := c.Find(tt.lookup)
			if tt.want < 0 {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Find(%q) = %+v, %v; want %v", tt.lookup, e, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Find(%q): %v", tt.lookup, err)
			}
			if e != es[tt.want] || code != codes[tt.want] {
				t.Errorf("Find(%q) = %+v, %q; want %+v, %q", tt.lookup, e, code, es[tt.want], codes[tt.want])
			}
		})
	}
	_, _, err := c.Find("script-2024")
	var amb *AmbiguousError
	if !errors.As(err, &amb) {
		t.Fatalf("Find(ambiguous) = %v, want *AmbiguousError", err)
	}
	if want := []string{es[2].Name, es[1].Name, es[0].Name}; !slices.Equal(amb.Matches, want) {
		t.Errorf("Matches = %q, want newest first %q", amb.Matches, want)
	}
	// An exact name wins over it also being part of another name.
	if e, _, err := c.Find(es[0].Name); err != nil || e.Name != es[0].Name {
		t.Errorf("Find(exact) = %v, %v", e.Name, err)
	}
}

func TestList(t *testing.T) {
	c, es, _ := fixture(t)
	names := func(es ...Entry) []string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name)
		}
		return n
	}
	tests := []struct {
		filter string
		want   []string
	}{
		{"", names(es[2], es[1], es[0])},
		{"list-", names(es[1], es[0])},                        // substring of the description
		{"LIST-NODES", names(es[1])},                          // case-insensitive
		{es[2].ContentHash[:12], names(es[2])},                // substring of the name
		{"list-*", names(es[1], es[0])},                       // glob over the description
		{"list-p*", names(es[0])},                             //
		{"*every*", names(es[0])},                             //
		{"script-2024-01-15t10-3[02]-*", names(es[2], es[0])}, // glob over the name
		{"watch", names(es[2])},
		{"list", names(es[1], es[0])},
		{"list-pods.ts", nil}, // a non-cache file is never listed
		{"secret", nil},       // nor a symlink
		{"nothing-*", nil},
		{"nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			got, err := c.List(tt.filter)
			if err != nil {
				t.Fatalf("List(%q): %v", tt.filter, err)
			}
			if got == nil {
				t.Errorf("List(%q) = nil, want a non-nil slice", tt.filter)
			}
			if !slices.Equal(names(got...), tt.want) {
				t.Errorf("List(%q) = %q, want %q", tt.filter, names(got...), tt.want)
			}
		})
	}
	all, _ := c.List("")
	for i, e := range all {
		if want := es[len(es)-1-i]; e != want {
			t.Errorf("List entry %d = %+v, want %+v", i, e, want)
		}
	}
	if _, err := c.List("list-["); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("List(malformed glob) = %v, want ErrInvalidFilter", err)
	}
}

func TestClear(t *testing.T) {
	c, _, _ := fixture(t)
	n, err := c.Clear()
	if err != nil || n != 3 {
		t.Fatalf("Clear = %d, %v; want 3, nil", n, err)
	}
	want := []string{"README", "list-pods.ts", "script-2024-01-15T11-00-00-aaaaaaaaaaaa.ts", "script-2024-01-15T11-00-01-bbbbbbbbbbbb.ts"}
	if got := dirNames(t, c.Dir()); !slices.Equal(got, want) {
		t.Errorf("dir after Clear = %q, want the non-scripts %q", got, want)
	}
	if n, err := c.Clear(); err != nil || n != 0 {
		t.Errorf("second Clear = %d, %v; want 0, nil", n, err)
	}
	if l, err := c.List(""); err != nil || len(l) != 0 {
		t.Errorf("List after Clear = %v, %v", l, err)
	}
}

func TestDirDeletedIsRecreated(t *testing.T) {
	tests := []struct {
		name string
		op   func(*Cache) error
	}{
		{"save", func(c *Cache) error { _, _, err := c.Save("again()", t0); return err }},
		{"list", func(c *Cache) error { _, err := c.List(""); return err }},
		{"clear", func(c *Cache) error { _, err := c.Clear(); return err }},
		{"find", func(c *Cache) error {
			if _, _, err := c.Find("x"); !errors.Is(err, ErrNotFound) {
				return err
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openTemp(t)
			mustSave(t, c, "first()", t0)
			if err := os.RemoveAll(c.Dir()); err != nil {
				t.Fatal(err)
			}
			if err := tt.op(c); err != nil {
				t.Fatalf("%s after the directory was deleted: %v", tt.name, err)
			}
			if fi, err := os.Stat(c.Dir()); err != nil || !fi.IsDir() {
				t.Fatalf("directory not recreated: %v", err)
			}
			e := mustSave(t, c, "second()", t0)
			if _, code, err := c.Find(e.Name); err != nil || code != "second()" {
				t.Errorf("Find after recreation = %q, %v", code, err)
			}
		})
	}
}

func TestNoTemporaryFilesLeft(t *testing.T) {
	c := openTemp(t)
	mustSave(t, c, "a()", t0)
	c.Save("a()", t0)
	c.Save(strings.Repeat("x", MaxScriptBytes+1), t0)
	writeFile(t, filepath.Join(c.Dir(), FileName("b()", t0)), "other")
	c.Save("b()", t0) // ErrCollision
	for _, n := range dirNames(t, c.Dir()) {
		if strings.HasPrefix(n, ".tmp") {
			t.Errorf("temporary file %q left behind", n)
		}
	}
}

func TestAmbiguousError(t *testing.T) {
	tests := []struct {
		matches []string
		want    string
	}{
		{[]string{"a", "b"}, `cache: name "x" matches several scripts: a, b`},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, `cache: name "x" matches several scripts: a, b, c, d, e and 2 more`},
	}
	for _, tt := range tests {
		err := error(&AmbiguousError{Name: "x", Matches: tt.matches})
		if !errors.Is(err, ErrAmbiguous) || err.Error() != tt.want {
			t.Errorf("AmbiguousError = %q, want %q wrapping ErrAmbiguous", err, tt.want)
		}
	}
}
