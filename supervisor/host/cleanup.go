package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sandboxDirPrefix starts the name of every per-sandbox directory under
// STATE_DIR/sb (the sandbox's id, "sb-" and 16 hex digits).
const sandboxDirPrefix = "sb-"

// CleanupStateDir removes what a crashed predecessor left under
// stateDir/sb: one directory per sandbox that was live when it died,
// holding the go-plugin socket and the sandbox's root mountpoint. Mounts
// of a sandbox live in its own mount namespace and die with its
// processes, but any mount below stateDir/sb that the calling process's
// mount namespace still shows (/proc/self/mountinfo) is detached first
// (umount2 MNT_DETACH), deepest first; a directory below which a mount
// remains is never removed, because removing it would delete the files of
// the mounted file system.
//
// It returns how many sandbox directories ("sb-…") it removed; other
// entries are left alone. A missing stateDir/sb is not an error. Errors of
// single entries are joined.
//
// Call it at start-up, before any sandbox of this process exists, and only
// in a supervisor that owns stateDir: an embedded supervisor shares the
// default state directory with a running `execfarm serve`, whose live
// sandboxes it would destroy.
func CleanupStateDir(stateDir string) (removed int, err error) {
	return cleanupStateDir(stateDir, "/proc/self/mountinfo")
}

func cleanupStateDir(stateDir, mountinfo string) (removed int, err error) {
	// The mount table names resolved absolute paths.
	sb, err := filepath.EvalSymlinks(filepath.Join(stateDir, "sb"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		sb, err = filepath.Abs(sb)
	}
	if err != nil {
		return 0, fmt.Errorf("clean up state dir: %w", err)
	}
	ents, err := os.ReadDir(sb)
	if err != nil {
		return 0, fmt.Errorf("clean up state dir: %w", err)
	}
	var errs []error
	mounts, err := mountsBelow(mountinfo, sb)
	if err != nil {
		return 0, fmt.Errorf("clean up state dir: %w", err)
	}
	if len(mounts) > 0 {
		for _, mp := range mounts {
			if err := detach(mp); err != nil {
				errs = append(errs, err)
			}
		}
		// Detaching a mount detaches the mounts below it; what is
		// still listed now failed to go.
		if mounts, err = mountsBelow(mountinfo, sb); err != nil {
			return 0, fmt.Errorf("clean up state dir: %w", err)
		}
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), sandboxDirPrefix) {
			continue
		}
		dir := filepath.Join(sb, e.Name())
		if i := slices.IndexFunc(mounts, func(mp string) bool { return below(mp, dir) }); i >= 0 {
			errs = append(errs, fmt.Errorf("clean up state dir: keep %s: %s is still mounted", dir, mounts[i]))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("clean up state dir: %w", err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// mountsBelow returns the mount points in the mountinfo file that lie
// strictly below dir, deepest first.
func mountsBelow(mountinfo, dir string) ([]string, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	var out []string
	for _, mp := range mountPoints(string(b)) {
		if below(mp, dir) && mp != dir {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out, nil
}

// below reports whether path is dir or lies below it.
func below(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// mountPoints returns the mount point (fifth field) of every line of a
// /proc/PID/mountinfo text, with the kernel's octal escapes of space, tab,
// newline and backslash decoded (proc(5)).
func mountPoints(mountinfo string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMountinfo(f[4]))
	}
	return out
}

// unescapeMountinfo decodes the \NNN octal escapes of a mountinfo field.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
