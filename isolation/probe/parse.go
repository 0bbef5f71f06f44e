package probe

import (
	"strconv"
	"strings"
)

// idRange is an inclusive range of host ids.
type idRange struct{ first, last uint64 }

func (r idRange) overlaps(o idRange) bool { return r.first <= o.last && o.first <= r.last }

// parseStatusIDs returns the ids on the Uid: and Gid: lines of a
// /proc/PID/status file (real, effective, saved set and filesystem id,
// proc(5)). Malformed numbers are skipped.
func parseStatusIDs(b []byte) []uint64 {
	var ids []uint64
	for _, line := range strings.Split(string(b), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "Uid" && key != "Gid") {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if n, err := strconv.ParseUint(f, 10, 32); err == nil {
				ids = append(ids, n)
			}
		}
	}
	return ids
}

// parseColonIDs returns, for each line of a colon-separated database
// (/etc/passwd: name:x:uid:gid:..., /etc/group: name:x:gid:...), the name
// and the numeric fields at the given indexes. Comments, blank lines and
// malformed fields are skipped.
func parseColonIDs(b []byte, fields ...int) map[string][]uint64 {
	out := map[string][]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		for _, i := range fields {
			if i >= len(parts) {
				continue
			}
			if n, err := strconv.ParseUint(parts[i], 10, 32); err == nil {
				out[parts[0]] = append(out[parts[0]], n)
			}
		}
	}
	return out
}

// parseSubIDs returns the ranges of /etc/subuid or /etc/subgid
// (subuid(5): name:first:count), keyed by their line's owner. Malformed
// lines and empty ranges are skipped.
func parseSubIDs(b []byte) map[string][]idRange {
	out := map[string][]idRange{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.Split(strings.TrimSpace(line), ":")
		if len(parts) != 3 || strings.HasPrefix(parts[0], "#") {
			continue
		}
		first, err1 := strconv.ParseUint(parts[1], 10, 32)
		count, err2 := strconv.ParseUint(parts[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 {
			continue
		}
		out[parts[0]] = append(out[parts[0]], idRange{first, first + count - 1})
	}
	return out
}

// parseFilesystems returns the filesystem types of /proc/filesystems
// ("nodev\toverlay", "\text4").
func parseFilesystems(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			out = append(out, f[len(f)-1])
		}
	}
	return out
}
