package cache

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/execfarm/execfarm/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// t0 is the fixed save time of the tests: the seed's example name time.
var t0 = time.Date(2024, 1, 15, 10, 30, 0, 123_000_000, time.UTC)

func openTemp(t testing.TB) *Cache {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "scripts"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

func mustSave(t testing.TB, c *Cache, code string, now time.Time) Entry {
	t.Helper()
	e, created, err := c.Save(code, now)
	if err != nil {
		t.Fatalf("Save(%q): %v", code, err)
	}
	if !created {
		t.Fatalf("Save(%q): created = false for new code", code)
	}
	return e
}

// dirNames lists every entry of dir, sorted.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
