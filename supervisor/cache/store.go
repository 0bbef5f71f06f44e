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

// principalPrefix starts the name of a principal's subdirectory;
// clientPrefix that of a client's, inside its principal's directory.
const (
	principalPrefix = "principal-"
	clientPrefix    = "client-"
)

// Owner names whose scripts a cache holds: a principal, or one client of
// it. The zero value is the local principal.
type Owner struct {
	// Principal is the key of the principal the transport authenticated,
	// without a client (principal.Principal.Unscoped().String()); "" or
	// LocalPrincipal is the local one.
	Principal string
	// Client is the id of one client of Principal
	// (principal.Principal.Client, 32 hex digits), whose scripts are its
	// own; "" is Principal itself.
	Client string
}

// Store is a script cache per principal and per client: an owner's
// scripts are listed, found, run and cleared by that owner only (a cache
// shared by all principals let one principal read another's code and
// descriptions, run it and delete it; one shared by a principal's clients
// let one MCP client do so to another, and to the principal). The local
// principal's cache is Config.Dir itself; any other principal's is its
// subdirectory principal-<16 hex digits of the SHA-256 of its key>, made
// 0700; a client's is the subdirectory client-<16 hex digits of the
// SHA-256 of its id> of its principal's, also 0700. All have the same
// trust rules; the bounds (Config.MaxScripts, Config.MaxBytes) count a
// principal's scripts and all its clients' together, so that clients,
// which any caller may make up, add nothing to the directory's size nor
// to the number of principals. A Store is safe for concurrent use.
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

// For returns the cache of o, creating its directory (and its
// principal's): for a Save. Errors: ErrTooManyPrincipals when the
// principal's directory is missing and MaxPrincipals others have one;
// OpenConfig's.
func (s *Store) For(o Owner) (*Cache, error) {
	h, err := s.open(o.Principal, true)
	if err != nil || o.Client == "" {
		return h, err
	}
	c := h.client(o.Client)
	if err := c.ensureDir(); err != nil {
		return nil, fmt.Errorf("open script cache: %w", err)
	}
	return c, nil
}

// Lookup returns the cache of o as For does, but nil (and no error) when
// o has no directory: reading or clearing the cache of an owner that
// never saved a script creates nothing, and so takes none of the
// MaxPrincipals places. A client's cache never holds its principal's
// scripts nor another client's.
func (s *Store) Lookup(o Owner) (*Cache, error) {
	h, err := s.open(o.Principal, false)
	if err != nil || h == nil || o.Client == "" {
		return h, err
	}
	c := h.client(o.Client)
	if !exists(c.dir) {
		return nil, nil
	}
	if err := checkDir(c.dir); err != nil {
		return nil, fmt.Errorf("open script cache: %w", err)
	}
	return c, nil
}

// client returns the cache of h's client id, in h's directory, with h's
// bounds and lock; its directory is not made.
func (h *Cache) client(id string) *Cache {
	sum := sha256.Sum256([]byte(id))
	return &Cache{
		dir:        filepath.Join(h.dir, clientPrefix+hex.EncodeToString(sum[:8])),
		maxScripts: h.maxScripts, maxBytes: h.maxBytes, holder: h, mu: h.mu,
	}
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

// Clear removes every script of o's cache and returns how many: a
// principal's own, not its clients', and a client's own only. An emptied
// subdirectory goes too: a client's, and a principal's once its clients'
// are gone, freeing its place among MaxPrincipals. An owner without a
// cache has none to clear.
func (s *Store) Clear(o Owner) (int, error) {
	c, err := s.Lookup(o)
	if err != nil || c == nil {
		return 0, err
	}
	n, err := c.Clear()
	if err != nil || c == s.root {
		return n, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	// Only when empty; the Caches stay, and a Save to come makes their
	// directories again.
	_ = os.Remove(c.Dir())
	if h := c.holder; h != nil && h != s.root {
		_ = os.Remove(h.Dir())
	}
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
