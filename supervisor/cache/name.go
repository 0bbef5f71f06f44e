package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"time"
)

const (
	// nameTimeLayout is the time part of a script name: the reference
	// server's toISOString().replace(/[:.]/g, '-').slice(0, 19), in UTC.
	nameTimeLayout = "2006-01-02T15-04-05"
	// headerPrefix starts the first line of every file the reference server
	// and this package write; it is stripped on read.
	headerPrefix = "// Executed via sandbox at "
	// headerTimeLayout is toISOString(): UTC, milliseconds, "Z".
	headerTimeLayout = "2006-01-02T15:04:05.000Z"
	// hashPrefixLen is the number of hex digits of the SHA-256 in a name.
	hashPrefixLen = 12
	// maxHeaderBytes bounds the header line accepted on read.
	maxHeaderBytes = 128
)

// namePattern is the only form of file name the cache reads, lists or
// removes; anything else in the directory is ignored.
var namePattern = regexp.MustCompile(`^script-([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2})-([0-9a-f]{12})\.ts$`)

// FileName returns the name under which code saved at now is stored, for
// example "script-2024-01-15T10-30-00-abc123def456.ts": the UTC time to the
// second and the first 12 hex digits of the SHA-256 of code.
func FileName(code string, now time.Time) string {
	return fileName(hashHex(code), now)
}

func fileName(hash string, now time.Time) string {
	return "script-" + now.UTC().Format(nameTimeLayout) + "-" + hash[:hashPrefixLen] + ".ts"
}

// hashHex returns the lower-case hex SHA-256 of code.
func hashHex(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// parseName reports whether name is a cached script's file name, and returns
// the time and hash prefix it carries.
func parseName(name string) (created time.Time, hash12 string, ok bool) {
	m := namePattern.FindStringSubmatch(name)
	if m == nil {
		return time.Time{}, "", false
	}
	t, err := time.Parse(nameTimeLayout, m[1])
	if err != nil {
		return time.Time{}, "", false
	}
	return t, m[2], true
}

// header returns the first line written before code saved at now.
func header(now time.Time) string {
	return headerPrefix + now.UTC().Format(headerTimeLayout) + "\n"
}

// splitHeader separates the header line from the code in a stored file. A
// file without the header is all code. The code is returned byte for byte,
// unlike the reference server, which trims it.
func splitHeader(content []byte) (code []byte, created time.Time, hasTime bool) {
	if !bytes.HasPrefix(content, []byte(headerPrefix)) {
		return content, time.Time{}, false
	}
	line, rest, found := bytes.Cut(content, []byte("\n"))
	if !found {
		rest = nil
	}
	ts := strings.TrimSuffix(string(line[len(headerPrefix):]), "\r")
	if len(ts) > maxHeaderBytes {
		return rest, time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return rest, time.Time{}, false
	}
	return rest, t.UTC(), true
}

// validLookup reports whether name could be (part of) a cached script's name:
// not empty, and free of path separators, "..", and NUL bytes.
func validLookup(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\\\x00") && !strings.Contains(name, "..")
}
