package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	local, err := s.For(Owner{Principal: LocalPrincipal})
	if err != nil || local.Dir() != dir {
		t.Fatalf("local cache %v, %v; want the directory itself", local, err)
	}
	if c, _ := s.For(Owner{Principal: ""}); c != local {
		t.Fatal(`"" is not the local principal`)
	}
	alice, err := s.For(Owner{Principal: "token:alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.For(Owner{Principal: "token:bob"})
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
	if again, _ := s.For(Owner{Principal: "token:alice"}); again != alice {
		t.Error("a principal's cache opened twice")
	}

	// Reading or clearing the cache of a principal that saved nothing
	// makes no directory, and so takes no place.
	if c, err := s.Lookup(Owner{Principal: "token:reader"}); c != nil || err != nil {
		t.Fatalf("Lookup of a principal without scripts: %v, %v", c, err)
	}
	if n, err := s.Clear(Owner{Principal: "token:reader"}); n != 0 || err != nil {
		t.Fatalf("Clear of a principal without scripts: %d, %v", n, err)
	}
	if n, _ := s.principalDirs(); n != 2 {
		t.Fatalf("%d principal directories; want alice's and bob's", n)
	}
	for i := 2; i < MaxPrincipals; i++ { // alice and bob hold two places
		if _, err := s.For(Owner{Principal: fmt.Sprintf("token:p%d", i)}); err != nil {
			t.Fatalf("principal %d: %v", i, err)
		}
	}
	if _, err := s.For(Owner{Principal: "token:one-too-many"}); !errors.Is(err, ErrTooManyPrincipals) {
		t.Fatalf("principal %d: %v; want ErrTooManyPrincipals", MaxPrincipals+1, err)
	}
	if n, err := s.Clear(Owner{Principal: "token:one-too-many"}); err != nil || n != 0 {
		t.Fatalf("clear of a principal without a cache: %d, %v", n, err)
	}
	if n, err := s.Clear(Owner{Principal: "token:alice"}); err != nil || n != 1 {
		t.Fatalf("clear alice: %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(alice.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("alice's emptied directory: %v; want it gone", err)
	}
	if c, err := s.Lookup(Owner{Principal: "token:alice"}); c != nil || err != nil {
		t.Fatalf("Lookup after alice's clear: %v, %v; want none", c, err)
	}
	if _, err := s.For(Owner{Principal: "token:one-too-many"}); err != nil {
		t.Fatalf("after a clear: %v", err)
	}
	// Alice, cleared, now counts as new: the places are full again.
	if _, err := s.For(Owner{Principal: "token:alice"}); !errors.Is(err, ErrTooManyPrincipals) {
		t.Fatalf("alice after her clear, with every place taken: %v; want ErrTooManyPrincipals", err)
	}
}

// Client ids as principal.Principal.Client gives them.
const (
	aliceClient = "a11ce000000000000000000000000000"
	bobClient   = "b0b00000000000000000000000000000"
)

// TestStorePerClient: a client's scripts are its own, as its sandboxes
// are: another client of the same principal, and the principal itself,
// neither list them nor find them by exact or partial name (the error is
// the one of a name no one saved), an ambiguous name lists only the
// caller's matches, the same code saved by another client is a script of
// its own (no "already cached" answer tells one client what another ran),
// and a clear removes the caller's scripts only. Clients take no place
// among MaxPrincipals. (The red-team report: over `execfarm mcp --http`
// one token's client listed another's script names through an ambiguous
// partial name, then ran them and read their secrets.)
func TestStorePerClient(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	open := func(o Owner) *Cache {
		t.Helper()
		c, err := s.For(o)
		if err != nil {
			t.Fatalf("For(%+v): %v", o, err)
		}
		return c
	}
	alice, bob, local := open(Owner{Client: aliceClient}), open(Owner{Client: bobClient}), open(Owner{})
	if local.Dir() != dir || filepath.Dir(alice.Dir()) != dir || alice.Dir() == bob.Dir() || !strings.HasPrefix(filepath.Base(alice.Dir()), clientPrefix) {
		t.Errorf("directories: local %s, alice %s, bob %s", local.Dir(), alice.Dir(), bob.Dir())
	}
	if st, err := os.Stat(alice.Dir()); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("alice's directory: %v, %v", st, err)
	}
	const secret = "// alice private\nconsole.log('alice secret','ALICE-KEY-42')"
	mine := mustSave(t, alice, secret, t0)
	mustSave(t, alice, "// alice's second\n2", t0.Add(time.Second))
	bobs := []Entry{mustSave(t, bob, "// bob one\n1", t0.Add(2*time.Second)), mustSave(t, bob, "// bob two\n2", t0.Add(3*time.Second))}
	locals := mustSave(t, local, "// the local user's\n3", t0.Add(4*time.Second))

	// Nobody else lists alice's scripts; she does not list theirs.
	for name, c := range map[string]*Cache{"bob": bob, "local": local, "alice": alice} {
		l, err := c.List("")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l {
			if owned := name == "alice"; owned != strings.HasPrefix(e.Description, "alice") {
				t.Errorf("%s lists %s (%q)", name, e.Name, e.Description)
			}
		}
	}
	if l, _ := alice.List(""); len(l) != 2 {
		t.Errorf("alice lists %d scripts, want her 2", len(l))
	}

	// By exact name, alice's script is not found, with the error of a name
	// that was never saved.
	never := strings.Replace(mine.Name, mine.ContentHash[:hashPrefixLen], "0123456789ab", 1)
	for name, c := range map[string]*Cache{"bob": bob, "local": local} {
		for _, n := range []string{mine.Name, strings.TrimSuffix(mine.Name, ".ts"), mine.ContentHash[:hashPrefixLen]} {
			_, code, err := c.Find(n)
			if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrAmbiguous) || code != "" {
				t.Errorf("%s finds alice's %q: %q, %v; want ErrNotFound", name, n, code, err)
			}
		}
		_, _, err := c.Find(mine.Name)
		_, _, errNever := c.Find(never)
		if err == nil || errNever == nil || err.Error() != strings.Replace(errNever.Error(), never, mine.Name, 1) {
			t.Errorf("%s: alice's name answers %v, a name never saved %v; want the same error", name, err, errNever)
		}
	}
	// Bob's ambiguous partial name lists his two scripts and no other.
	_, _, err = bob.Find("script-")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || !slices.Equal(amb.Matches, []string{bobs[1].Name, bobs[0].Name}) {
		t.Fatalf("bob's Find(script-) = %v; want his two names alone", err)
	}
	// A partial name of one of his scripts finds it.
	if e, _, err := bob.Find(bobs[1].ContentHash[:hashPrefixLen]); err != nil || e.Name != bobs[1].Name {
		t.Errorf("bob's Find of his own hash: %+v, %v", e, err)
	}
	if e, code, err := alice.Find(mine.Name); err != nil || code != secret || e.Name != mine.Name {
		t.Errorf("alice's Find of her own: %+v, %q, %v", e, code, err)
	}
	if _, _, err := alice.Find(locals.Name); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice finds the local user's script: %v", err)
	}

	// The same code saved by bob is his own copy.
	if e, created, err := bob.Save(secret, t0.Add(5*time.Second)); err != nil || !created || filepath.Dir(filepath.Join(bob.Dir(), e.Name)) != bob.Dir() {
		t.Errorf("bob saves alice's code: %+v, created %v, %v; want a script of his own", e, created, err)
	}

	// Clears: bob's own only; Lookup finds no cache left for him.
	if n, err := s.Clear(Owner{Client: bobClient}); err != nil || n != 3 {
		t.Fatalf("bob's Clear: %d, %v; want his 3", n, err)
	}
	if c, err := s.Lookup(Owner{Client: bobClient}); c != nil || err != nil {
		t.Errorf("Lookup of bob after his clear: %v, %v; want none", c, err)
	}
	if c, err := s.Lookup(Owner{Client: "c0ffee00000000000000000000000000"}); c != nil || err != nil {
		t.Errorf("Lookup of a client that saved nothing: %v, %v; want none", c, err)
	}
	if n, err := s.Clear(Owner{}); err != nil || n != 1 {
		t.Fatalf("the local principal's Clear: %d, %v; want its 1", n, err)
	}
	if l, err := alice.List(""); err != nil || len(l) != 2 {
		t.Errorf("alice after the others' clears: %d scripts, %v; want 2", len(l), err)
	}

	// Clients take no place among MaxPrincipals: a principal's clients,
	// however many, hold its one directory.
	for i := range MaxPrincipals + 1 {
		c := open(Owner{Principal: "token:carol", Client: fmt.Sprintf("%032x", i)})
		mustSave(t, c, fmt.Sprintf("// carol's client %d\n%d", i, i), t0)
	}
	if n, _ := s.principalDirs(); n != 1 {
		t.Errorf("%d principal directories for carol's clients; want 1", n)
	}
}

// TestStoreBoundsCountClients: a principal's bounds count its scripts and
// all its clients' together (the directory holds no more than before
// clients had caches); past them the holder with the most scripts loses
// its oldest, so one client's saves cannot push out another's few; among
// holders with as many, the oldest script goes; and a client's directory
// emptied so goes.
func TestStoreBoundsCountClients(t *testing.T) {
	s, err := OpenStore(Config{Dir: t.TempDir(), MaxScripts: 3})
	if err != nil {
		t.Fatal(err)
	}
	caches := map[Owner]*Cache{}
	var saved []string
	save := func(o Owner) {
		t.Helper()
		c, err := s.For(o)
		if err != nil {
			t.Fatal(err)
		}
		caches[o] = c
		i := len(saved)
		saved = append(saved, mustSave(t, c, fmt.Sprintf("console.log(%d)", i), t0.Add(time.Duration(i)*time.Second)).Name)
	}
	held := func() []string {
		t.Helper()
		var names []string
		for _, c := range caches {
			l, err := c.List("")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l {
				names = append(names, e.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	local, alice, bob, carol := Owner{}, Owner{Client: aliceClient}, Owner{Client: bobClient}, Owner{Client: "c0ffee00000000000000000000000000"}
	for _, o := range []Owner{alice, local, bob, alice} {
		save(o)
	}
	// Alice held two of four: her oldest went.
	if got, want := held(), []string{saved[1], saved[2], saved[3]}; !slices.Equal(got, want) {
		t.Fatalf("held %v; want %v", got, want)
	}
	// Bob saves three more: each removes his own oldest, never the
	// others' one script each.
	for range 3 {
		save(bob)
	}
	if got, want := held(), []string{saved[1], saved[3], saved[6]}; !slices.Equal(got, want) {
		t.Fatalf("after bob's saves held %v; want local's, alice's and bob's newest %v", got, want)
	}
	// Four holders of one script each: the oldest of all goes (local's),
	// then alice's, whose directory goes with it.
	save(carol)
	save(local)
	if got, want := held(), []string{saved[6], saved[7], saved[8]}; !slices.Equal(got, want) {
		t.Fatalf("held %v; want %v", got, want)
	}
	if _, err := os.Stat(caches[alice].Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("alice's directory, her scripts all removed: %v; want it gone", err)
	}
	if l, err := s.Lookup(alice); l != nil || err != nil {
		t.Errorf("Lookup of alice: %v, %v; want none", l, err)
	}
}

// TestStoreByteBoundTakesFromTheLargest: past the byte bound, the holder
// whose scripts take the most bytes loses its oldest, not whoever saved
// first.
func TestStoreByteBoundTakesFromTheLargest(t *testing.T) {
	s, err := OpenStore(Config{Dir: t.TempDir(), MaxBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := s.For(Owner{Client: aliceClient})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.For(Owner{Client: bobClient})
	if err != nil {
		t.Fatal(err)
	}
	small := mustSave(t, alice, "console.log('alice')", t0)
	var big []Entry
	for i := range 4 {
		big = append(big, mustSave(t, bob, fmt.Sprintf("// %s\nconsole.log(%d)", strings.Repeat("b", 900), i), t0.Add(time.Duration(i+1)*time.Second)))
	}
	if _, _, err := alice.Find(small.Name); err != nil {
		t.Errorf("alice's small script after bob's big saves: %v; want it kept", err)
	}
	l, err := bob.List("")
	if err != nil {
		t.Fatal(err)
	}
	if len(l) == 0 || len(l) == len(big) || l[0].Name != big[len(big)-1].Name {
		t.Errorf("bob holds %d scripts, newest first %v; want his oldest removed and his newest %s kept", len(l), l, big[len(big)-1].Name)
	}
}
