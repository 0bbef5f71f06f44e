package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// MaxPrincipals bounds how many principals other than the local one have a
// cache of their own in a Store, so that the directory's size stays at
// most (MaxPrincipals+1) × Config.MaxBytes: 65 × 64 MiB by default. Past
// it, the scripts of a principal new to the store are not cached
// (ErrTooManyPrincipals) until one is cleared.
const MaxPrincipals = 64

// ErrTooManyPrincipals is returned by Store.For for a principal without a
// cache when MaxPrincipals others have one.
var ErrTooManyPrincipals = errors.New("script cache: too many principals have scripts cached")

// LocalPrincipal is the key of the principal whose scripts are kept in the
// directory itself, as the reference server keeps them, so that both
// servers can share it: the unauthenticated caller of a unix socket.
const LocalPrincipal = "local"

// principalPrefix starts the name of a principal's subdirectory.
const principalPrefix = "principal-"

// Store is a script cache per principal: a principal's scripts are listed,
// found, run and cleared by that principal only (a cache shared by all of
// them let one principal read another's code and descriptions, run it and
// delete it). The local principal's cache is Config.Dir itself; any
// other's is its subdirectory principal-<16 hex digits of the SHA-256 of
// its key>, made 0700, with the same trust rules and bounds. A Store is
// safe for concurrent use.
type Store struct {
	cfg  Config
	root *Cache

	mu   sync.Mutex
	subs map[string]*Cache // open caches of principals other than the local one
}

// OpenStore opens the store cfg describes (its directory is the local
// principal's cache). Errors are OpenConfig's.
func OpenStore(cfg Config) (*Store, error) {
	root, err := OpenConfig(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Dir = root.Dir()
	return &Store{cfg: cfg, root: root, subs: map[string]*Cache{}}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.root.Dir() }

// For returns the cache of principal (a principal's key, as
// principal.Principal.String gives it; "" or LocalPrincipal for the local
// one), creating its directory: for a Save. Errors: ErrTooManyPrincipals
// when the directory is missing and MaxPrincipals others have one;
// OpenConfig's.
func (s *Store) For(principal string) (*Cache, error) {
	return s.open(principal, true)
}

// Lookup returns the cache of principal as For does, but nil (and no
// error) when the principal has no directory: reading or clearing the
// cache of a principal that never saved a script creates nothing, and
// so takes none of the MaxPrincipals places.
func (s *Store) Lookup(principal string) (*Cache, error) {
	return s.open(principal, false)
}

func (s *Store) open(principal string, create bool) (*Cache, error) {
	if principal == "" || principal == LocalPrincipal {
		return s.root, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.subs[principal]
	sum := sha256.Sum256([]byte(principal))
	dir := filepath.Join(s.root.Dir(), principalPrefix+hex.EncodeToString(sum[:8]))
	if !exists(dir) {
		if !create {
			return nil, nil
		}
		n, err := s.principalDirs()
		if err != nil {
			return nil, err
		}
		if n >= MaxPrincipals {
			return nil, fmt.Errorf("%w (%d)", ErrTooManyPrincipals, n)
		}
	}
	if c != nil {
		return c, nil // its directory was cleared: Save makes it again
	}
	cfg := s.cfg
	cfg.Dir = dir
	c, err := OpenConfig(cfg)
	if err != nil {
		return nil, err
	}
	if len(s.subs) >= 2*MaxPrincipals {
		// Forget the caches of cleared principals (their directories
		// gone): the map holds at most the principals with scripts.
		for p, o := range s.subs {
			if !exists(o.Dir()) {
				delete(s.subs, p)
			}
		}
	}
	s.subs[principal] = c
	return c, nil
}

// Clear removes every script of principal's cache and returns how many;
// a principal's emptied subdirectory goes too, freeing its place among
// MaxPrincipals. A principal without a cache has none to clear.
func (s *Store) Clear(principal string) (int, error) {
	c, err := s.Lookup(principal)
	if err != nil || c == nil {
		return 0, err
	}
	n, err := c.Clear()
	if err != nil || c == s.root {
		return n, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = os.Remove(c.Dir()) // only when empty; its Cache stays, for a Save to come
	return n, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// principalDirs counts the principals' subdirectories.
func (s *Store) principalDirs() (int, error) {
	ents, err := os.ReadDir(s.root.Dir())
	if err != nil {
		return 0, fmt.Errorf("script cache: %w", err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), principalPrefix) {
			n++
		}
	}
	return n, nil
}
