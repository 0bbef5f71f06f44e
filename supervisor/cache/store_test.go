package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStorePerPrincipal: the local principal's cache is the directory
// itself (shared with the reference server); every other principal's is a
// 0700 subdirectory of its own, holding only its scripts; at most
// MaxPrincipals such caches exist, and clearing one frees its place.
func TestStorePerPrincipal(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	local, err := s.For(LocalPrincipal)
	if err != nil || local.Dir() != dir {
		t.Fatalf("local cache %v, %v; want the directory itself", local, err)
	}
	if c, _ := s.For(""); c != local {
		t.Fatal(`"" is not the local principal`)
	}
	alice, err := s.For("token:alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.For("token:bob")
	if err != nil {
		t.Fatal(err)
	}
	if alice.Dir() == bob.Dir() || filepath.Dir(alice.Dir()) != dir || !strings.HasPrefix(filepath.Base(alice.Dir()), principalPrefix) {
		t.Fatalf("caches %s and %s", alice.Dir(), bob.Dir())
	}
	if st, err := os.Stat(alice.Dir()); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("alice's directory: %v, %v", st, err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, _, err := alice.Save("// alice\n1", now); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Cache{"bob": bob, "local": local} {
		if l, err := c.List(""); err != nil || len(l) != 0 {
			t.Errorf("%s lists %v, %v", name, l, err)
		}
	}
	if again, _ := s.For("token:alice"); again != alice {
		t.Error("a principal's cache opened twice")
	}

	// Reading or clearing the cache of a principal that saved nothing
	// makes no directory, and so takes no place.
	if c, err := s.Lookup("token:reader"); c != nil || err != nil {
		t.Fatalf("Lookup of a principal without scripts: %v, %v", c, err)
	}
	if n, err := s.Clear("token:reader"); n != 0 || err != nil {
		t.Fatalf("Clear of a principal without scripts: %d, %v", n, err)
	}
	if n, _ := s.principalDirs(); n != 2 {
		t.Fatalf("%d principal directories; want alice's and bob's", n)
	}
	for i := 2; i < MaxPrincipals; i++ { // alice and bob hold two places
		if _, err := s.For(fmt.Sprintf("token:p%d", i)); err != nil {
			t.Fatalf("principal %d: %v", i, err)
		}
	}
	if _, err := s.For("token:one-too-many"); !errors.Is(err, ErrTooManyPrincipals) {
		t.Fatalf("principal %d: %v; want ErrTooManyPrincipals", MaxPrincipals+1, err)
	}
	if n, err := s.Clear("token:one-too-many"); err != nil || n != 0 {
		t.Fatalf("clear of a principal without a cache: %d, %v", n, err)
	}
	if n, err := s.Clear("token:alice"); err != nil || n != 1 {
		t.Fatalf("clear alice: %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(alice.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("alice's emptied directory: %v; want it gone", err)
	}
	if c, err := s.Lookup("token:alice"); c != nil || err != nil {
		t.Fatalf("Lookup after alice's clear: %v, %v; want none", c, err)
	}
	if _, err := s.For("token:one-too-many"); err != nil {
		t.Fatalf("after a clear: %v", err)
	}
	// Alice, cleared, now counts as new: the places are full again.
	if _, err := s.For("token:alice"); !errors.Is(err, ErrTooManyPrincipals) {
		t.Fatalf("alice after her clear, with every place taken: %v; want ErrTooManyPrincipals", err)
	}
}
