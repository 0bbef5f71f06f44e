package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxScriptBytes is the largest script, in bytes of code, that Save stores.
const MaxScriptBytes = 1 << 20

// Entry describes one cached script; it maps onto the wire CacheEntry.
type Entry struct {
	// Name is the file name, e.g. "script-2024-01-15T10-30-00-abc123def456.ts";
	// it is what Execute's `cached` field names.
	Name string
	// Description is the first comment line of the code (see Describe).
	Description string
	// ContentHash is the lower-case hex SHA-256 of the code, 64 digits; the
	// name carries its first 12. The reference server sent only those 12.
	ContentHash string
	// CreatedAt is when the script was saved, in UTC to the millisecond, read
	// from the file's header line or, without one, from the name (to the
	// second).
	CreatedAt time.Time
}

// Defaults of Config.
const (
	// DefaultMaxScripts is how many scripts a cache holds at most.
	DefaultMaxScripts = 1000
	// DefaultMaxBytes is how many bytes of script files a cache holds at
	// most.
	DefaultMaxBytes = 64 << 20
)

// Config configures a Cache.
type Config struct {
	// Dir is the cache directory; it must not be empty (ErrInvalidDir). A
	// missing one is created with mode 0700. It must be a directory, not a
	// symlink, owned by the process's effective uid and writable by no one
	// else, below ancestors that only root or that uid can change (a
	// world-writable ancestor must be sticky, like /tmp): ErrUnsafeDir
	// otherwise, since whoever can write there can plant scripts.
	Dir string
	// MaxScripts bounds the number of scripts; past it Save removes the
	// oldest of the holder with the most (see bound). Zero =>
	// DefaultMaxScripts (1000).
	MaxScripts int
	// MaxBytes bounds the bytes of all script files together; past it Save
	// removes the oldest of the holder taking the most bytes. Zero =>
	// DefaultMaxBytes (64 MiB).
	MaxBytes int64
}

// Cache is a directory of cached scripts. It is safe for concurrent use, and
// several processes of the same uid may share the directory. Only files
// this uid wrote (owned by it, mode without group or other write)
// are read, listed, counted or removed.
type Cache struct {
	dir        string
	maxScripts int
	maxBytes   int64
	// holder is nil for a principal's cache; for a client's (Store.For
	// with Owner.Client), the cache of the principal it is a client of,
	// whose directory holds the client's and whose bounds count the
	// scripts of both (see bound).
	holder *Cache
	// mu serialises Save and Clear in this process, so that one script is
	// never written twice by two goroutines and one bound runs at a time
	// over a holder's scripts; it is the holder's for a client's cache.
	// Readers need no lock since files appear whole.
	mu *sync.Mutex
}

// Open is OpenConfig with dir and the default bounds.
func Open(dir string) (*Cache, error) {
	return OpenConfig(Config{Dir: dir})
}

// OpenConfig returns the cache cfg describes, creating its directory if it
// is missing. Errors: ErrInvalidDir for an empty directory name,
// ErrUnsafeDir for a directory others could plant scripts in.
func OpenConfig(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("open script cache: %w: empty path", ErrInvalidDir)
	}
	if cfg.MaxScripts < 0 || cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("open script cache: %w: negative bound", ErrInvalidDir)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("open script cache: %w", err)
	}
	c := &Cache{dir: dir, maxScripts: cfg.MaxScripts, maxBytes: cfg.MaxBytes, mu: new(sync.Mutex)}
	if c.maxScripts == 0 {
		c.maxScripts = DefaultMaxScripts
	}
	if c.maxBytes == 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if err := c.ensureDir(); err != nil {
		return nil, fmt.Errorf("open script cache: %w", err)
	}
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.dir }

// ensureDir creates the directory when it is missing and checks that no
// one else can write to it (checkDir).
func (c *Cache) ensureDir() error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("create cache directory: %w", err)
	}
	return checkDir(c.dir)
}

// Save stores code, which has just run successfully, saved at now. When a
// script with the same SHA-256 is already cached it returns that script's
// entry and created false; otherwise it writes script-<now>-<hash12>.ts and
// returns created true. The file is written whole (temporary file, fsync,
// link into place, fsync of the directory), so no reader or concurrent writer
// ever sees part of it and an existing file is never overwritten. A cache
// directory deleted since Open is recreated. Code longer than MaxScriptBytes
// is not stored (ErrTooLarge).
func (c *Cache) Save(code string, now time.Time) (e Entry, created bool, err error) {
	if len(code) > MaxScriptBytes {
		return Entry{}, false, fmt.Errorf("save script: %w: %d bytes, limit %d", ErrTooLarge, len(code), MaxScriptBytes)
	}
	hash := hashHex(code)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensureDir(); err != nil {
		return Entry{}, false, fmt.Errorf("save script: %w", err)
	}
	old, found, err := c.findByHash(hash)
	if err != nil {
		return Entry{}, false, fmt.Errorf("save script: %w", err)
	}
	if found {
		return old, false, nil
	}
	now = now.UTC().Truncate(time.Millisecond)
	name := fileName(hash, now)
	if err := c.writeNew(name, header(now)+code); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return Entry{}, false, fmt.Errorf("save script %s: %w", name, err)
		}
		// Another process saved a file of this name first.
		old, _, rerr := c.readScript(name)
		if rerr != nil {
			return Entry{}, false, fmt.Errorf("save script %s: %w", name, rerr)
		}
		if old.ContentHash != hash {
			return Entry{}, false, fmt.Errorf("save script %s: %w", name, ErrCollision)
		}
		return old, false, nil
	}
	if err := c.bound(name); err != nil {
		return Entry{}, false, fmt.Errorf("save script: %w", err)
	}
	return Entry{Name: name, Description: Describe(code), ContentHash: hash, CreatedAt: now}, true, nil
}

// bound removes scripts while more than maxScripts are held or their files
// take more than maxBytes; keep, the script just saved in c, is never
// removed. The bounds count a principal's scripts and its clients' (the
// client-* subdirectories of its directory) together, so that its clients
// hold no more on disk than it may alone. Past a bound, the holder (the
// principal's own scripts, or one client's) that holds the most — scripts
// past maxScripts, bytes past maxBytes — loses its oldest (by the time
// its file was written); a tie goes to the holder whose oldest is older.
// So a client saving many scripts removes its own before anyone else's,
// and cannot push out another client's few. Client directories left empty
// are removed.
func (c *Cache) bound(keep string) error {
	h := c
	if c.holder != nil {
		h = c.holder
	}
	keep = filepath.Join(c.dir, keep)
	files, clients, err := h.scriptFiles()
	if err != nil {
		return err
	}
	// Each holder's scripts, oldest first: by the time the file was
	// written (the name has only the second), then by name.
	type holder struct {
		files []scriptFile // removable ones, oldest first
		n     int          // scripts held, keep included
		bytes int64
	}
	holders := map[string]*holder{}
	n, total := len(files), int64(0)
	for _, f := range files {
		d := filepath.Dir(f.path)
		hd := holders[d]
		if hd == nil {
			hd = &holder{}
			holders[d] = hd
		}
		hd.n++
		hd.bytes += f.size
		total += f.size
		if f.path != keep {
			hd.files = append(hd.files, f)
		}
	}
	for _, hd := range holders {
		slices.SortFunc(hd.files, func(a, b scriptFile) int {
			if c := a.mod.Compare(b.mod); c != 0 {
				return c
			}
			return strings.Compare(filepath.Base(a.path), filepath.Base(b.path))
		})
	}
	var errs []error
	for n > h.maxScripts || total > h.maxBytes {
		byCount := n > h.maxScripts
		var most *holder
		for _, hd := range holders {
			if len(hd.files) == 0 {
				continue
			}
			if most == nil {
				most = hd
				continue
			}
			a, b := int64(hd.n), int64(most.n)
			if !byCount {
				a, b = hd.bytes, most.bytes
			}
			if a > b || a == b && hd.files[0].mod.Before(most.files[0].mod) {
				most = hd
			}
		}
		if most == nil {
			break // only keep is left
		}
		f := most.files[0]
		most.files = most.files[1:]
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		most.n--
		most.bytes -= f.size
		n--
		total -= f.size
	}
	for _, d := range clients {
		if d != c.dir {
			_ = os.Remove(d) // only when empty
		}
	}
	return errors.Join(errs...)
}

// scriptFile is a script's file as bound sees it.
type scriptFile struct {
	path string
	size int64
	mod  time.Time
}

// scriptFiles returns the scripts this uid wrote (trusted) in c's
// directory and in its clients' subdirectories, and the paths of those
// subdirectories. A client directory that cannot be read is skipped.
func (c *Cache) scriptFiles() ([]scriptFile, []string, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read cache directory: %w", err)
	}
	files := scriptsIn(c.dir, des)
	var clients []string
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), clientPrefix) {
			continue // a symlink is no directory here
		}
		d := filepath.Join(c.dir, de.Name())
		sub, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		files = append(files, scriptsIn(d, sub)...)
		clients = append(clients, d)
	}
	return files, clients, nil
}

// scriptsIn returns the trusted scripts among des, the entries of dir.
func scriptsIn(dir string, des []fs.DirEntry) []scriptFile {
	var files []scriptFile
	for _, de := range des {
		if _, _, ok := parseName(de.Name()); !ok || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil || trusted(fi) != nil {
			continue
		}
		files = append(files, scriptFile{filepath.Join(dir, de.Name()), fi.Size(), fi.ModTime()})
	}
	return files
}

// writeNew writes content to a new file name in the cache directory. It
// fails with an error wrapping fs.ErrExist when the name is taken.
func (c *Cache) writeNew(name, content string) (err error) {
	f, err := os.CreateTemp(c.dir, ".tmp-script-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove temporary file: %w", rerr)
		}
	}()
	if _, err := io.WriteString(f, content); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	// link, unlike rename, refuses to replace an existing name.
	if err := os.Link(tmp, filepath.Join(c.dir, name)); err != nil {
		return err
	}
	c.syncDir()
	return nil
}

// syncDir makes the new directory entry durable. It is best effort: some
// platforms and file systems cannot fsync a directory, and the script is
// already complete on disk.
func (c *Cache) syncDir() {
	d, err := os.Open(c.dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// findByHash returns the cached script whose code has the SHA-256 hash,
// confirmed by hashing the file.
func (c *Cache) findByHash(hash string) (Entry, bool, error) {
	names, err := c.names()
	if err != nil {
		return Entry{}, false, err
	}
	for _, name := range names {
		if _, h12, _ := parseName(name); h12 != hash[:hashPrefixLen] {
			continue
		}
		e, _, err := c.readScript(name)
		if err == nil && e.ContentHash == hash {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Find returns the cached script called name and its code. An exact name,
// with or without ".ts", is tried first; otherwise name must be part of
// exactly one cached name, compared without regard to case (ErrNotFound for
// none, an *AmbiguousError for several). Names holding a path separator,
// "..", or NUL are never found: Find reads only files of the cache's own
// name form directly inside the directory, and never through a symlink.
func (c *Cache) Find(name string) (Entry, string, error) {
	if !validLookup(name) {
		return Entry{}, "", fmt.Errorf("find script %s: %w", quote(name), ErrNotFound)
	}
	exact := name
	if !strings.HasSuffix(exact, ".ts") {
		exact += ".ts"
	}
	if _, _, ok := parseName(exact); ok {
		e, code, err := c.readScript(exact)
		if err == nil {
			return e, string(code), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrNotFound) {
			return Entry{}, "", fmt.Errorf("find script: %w", err)
		}
	}
	names, err := c.names()
	if err != nil {
		return Entry{}, "", fmt.Errorf("find script: %w", err)
	}
	lower := strings.ToLower(name)
	var matches []string
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), lower) {
			matches = append(matches, n)
		}
	}
	switch len(matches) {
	case 0:
		return Entry{}, "", fmt.Errorf("find script %s: %w", quote(name), ErrNotFound)
	case 1:
		e, code, err := c.readScript(matches[0])
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		if err != nil {
			return Entry{}, "", fmt.Errorf("find script: %w", err)
		}
		return e, string(code), nil
	}
	slices.Reverse(matches) // names sort oldest first
	return Entry{}, "", &AmbiguousError{Name: name, Matches: matches}
}

// List returns the cached scripts, newest first. An empty filter lists all.
// A filter holding '*', '?' or '[' is a glob (see globMatch) that must match
// the whole name or the whole description, so "list-*" lists scripts whose
// description starts with "list-" and "script-2024-01-*" those saved in
// January 2024; any other filter must be part of the name or the
// description. Both compare without regard to case. The reference server
// matched a substring of the name only, which this includes. A malformed
// glob is ErrInvalidFilter. Files that cannot be read are left out.
func (c *Cache) List(filter string) ([]Entry, error) {
	glob := isGlob(filter)
	lower := strings.ToLower(filter)
	if glob {
		if err := checkGlob(lower); err != nil {
			return nil, fmt.Errorf("list scripts: %w", err)
		}
	}
	names, err := c.names()
	if err != nil {
		return nil, fmt.Errorf("list scripts: %w", err)
	}
	entries := []Entry{}
	for _, name := range names {
		e, _, err := c.readScript(name)
		if err != nil {
			continue
		}
		n, d := strings.ToLower(e.Name), strings.ToLower(e.Description)
		switch {
		case filter == "":
		case glob && (globMatch(lower, n) || globMatch(lower, d)):
		case !glob && (strings.Contains(n, lower) || strings.Contains(d, lower)):
		default:
			continue
		}
		entries = append(entries, e)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	return entries, nil
}

// Clear removes every cached script and returns how many it removed. Files
// of other names in the directory are left alone. When some removals fail it
// returns the count of those that succeeded and the joined errors.
func (c *Cache) Clear() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, err := c.names()
	if err != nil {
		return 0, fmt.Errorf("clear scripts: %w", err)
	}
	n := 0
	var errs []error
	for _, name := range names {
		err := os.Remove(filepath.Join(c.dir, name))
		switch {
		case err == nil:
			n++
		case errors.Is(err, fs.ErrNotExist):
			// Removed by another process meanwhile.
		default:
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("clear scripts: %w", err)
	}
	return n, nil
}

// names returns the names of the files in the directory that have the
// cache's name form and were written by this uid (trusted), sorted (oldest
// first). A missing directory holds no scripts; a principal's is
// recreated, a client's left for its next Save to make.
func (c *Cache) names() ([]string, error) {
	des, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if c.holder != nil {
			return nil, nil
		}
		return nil, c.ensureDir()
	}
	if err != nil {
		return nil, fmt.Errorf("read cache directory: %w", err)
	}
	var names []string
	for _, de := range des {
		if _, _, ok := parseName(de.Name()); !ok || !de.Type().IsRegular() {
			continue
		}
		if fi, err := de.Info(); err == nil && trusted(fi) == nil {
			names = append(names, de.Name())
		}
	}
	return names, nil
}

// readScript reads the cached script called name, which must have the
// cache's name form. It refuses anything but a file this uid wrote
// (trusted; ErrNotFound),
// checking the opened file is the one it examined, and files too large to
// have been written by Save (ErrTooLarge).
func (c *Cache) readScript(name string) (Entry, []byte, error) {
	created, _, ok := parseName(name)
	if !ok {
		return Entry{}, nil, fmt.Errorf("read script %s: %w", quote(name), ErrNotFound)
	}
	path := filepath.Join(c.dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, nil, fmt.Errorf("read script: %w", err)
	}
	if err := trusted(fi); err != nil {
		return Entry{}, nil, fmt.Errorf("read script %s: %w: %w", name, ErrNotFound, err)
	}
	const limit = MaxScriptBytes + maxHeaderBytes + int64(len(headerPrefix)) + 1
	if fi.Size() > limit {
		return Entry{}, nil, fmt.Errorf("read script %s: %w", name, ErrTooLarge)
	}
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, nil, fmt.Errorf("read script: %w", err)
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return Entry{}, nil, fmt.Errorf("read script %s: %w: replaced while opening", name, ErrNotFound)
	}
	content, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return Entry{}, nil, fmt.Errorf("read script %s: %w", name, err)
	}
	code, hdrTime, hasTime := splitHeader(content)
	if int64(len(content)) > limit || len(code) > MaxScriptBytes {
		return Entry{}, nil, fmt.Errorf("read script %s: %w", name, ErrTooLarge)
	}
	if hasTime {
		created = hdrTime
	}
	return Entry{
		Name:        name,
		Description: Describe(string(code)),
		ContentHash: hashHex(string(code)),
		CreatedAt:   created,
	}, code, nil
}
