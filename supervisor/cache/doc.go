// Package cache keeps scripts that ran successfully in a directory
// (SCRIPTS_CACHE_DIR), deduplicated by content hash, so that a later
// Execute can run them again by name (the `cached` field of ExecuteRequest)
// and ListCache/ClearCache can list and remove them.
//
// The rules come from the ProDisco seed (seeds/000_0155cb039c3b4917.txt,
// "Cache Manager" and CacheEntry) and from the reference server's
// cache-manager.ts, whose on-disk format is kept so both servers can share a
// directory:
//
//   - a script is stored as script-<UTC time>-<hash12>.ts, for example
//     script-2024-01-15T10-30-00-abc123def456.ts, where the time is the save
//     time to the second (ISO 8601 with ':' replaced by '-') and hash12 is the
//     first 12 hex digits of the SHA-256 of the code;
//   - the file holds one header line, "// Executed via sandbox at <ISO time>",
//     followed by the code byte for byte; the header is stripped on read;
//   - the description is the text of the first comment line of the code
//     (see Describe);
//   - a lookup by name tries the exact name, with or without ".ts", before a
//     case-insensitive partial match.
//
// Departures from the reference server, on purpose: content equal to a cached
// script (same full SHA-256) is never stored twice and Save returns the
// existing entry instead of nothing; files are written to a temporary file,
// fsynced and linked into place so readers and concurrent writers (threads or
// processes) never see a partial script and never overwrite one; only names
// of the exact form above are read, listed or removed, and only regular files
// (a symlink planted in the directory is ignored); several partial matches are
// an error (ErrAmbiguous) rather than an arbitrary pick; a List filter is a
// glob when it holds * ? or [ and a substring otherwise, matched against the
// name and the description; scripts larger than MaxScriptBytes are not cached.
//
// The directory is trusted only when no one else can write to it: Open
// refuses (ErrUnsafeDir) a directory that is a symlink, is owned by another
// uid, is writable by group or others, or lies below an ancestor that
// another non-root uid owns or that others may write to without the sticky
// bit. Files in it are read, listed, counted and removed only when they are
// regular files owned by this process's uid and writable by no one else, so
// a script planted by another user (say, dated 2099 to be listed first) is
// ignored. The cache is bounded: past Config.MaxScripts scripts (1000) or
// Config.MaxBytes bytes (64 MiB), Save removes the oldest script of the
// holder (a principal's own scripts, or one of its clients') that holds the
// most.
//
// A Store keeps a Cache per principal (the local principal's is the
// directory itself, the reference server's layout; another's a
// subdirectory of its own) and per client of a principal (a subdirectory
// of the principal's, within its bounds), so that no principal or client
// lists, runs or clears another's scripts.
//
// Callers save only after a successful run: the package cannot tell, so the
// rule "failed runs are never cached" is the caller's. A Cache is safe for
// concurrent use. The package is pure Go and knows nothing of gRPC; the
// service converts Entry to the wire CacheEntry.
package cache
