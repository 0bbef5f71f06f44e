package cgroup

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// The parsers below read cgroup files, which the kernel writes, but which
// a fake or corrupted tree (or a future kernel) can fill with anything;
// they never panic and report malformed input as ErrMalformed.

// maxFileBytes bounds what is read from one cgroup file.
const maxFileBytes = 64 << 10

// parseFlatKeyed parses a flat keyed file: lines of "key value", as in
// cpu.stat, memory.events, memory.oom_control, cpuacct.stat
// (Documentation/admin-guide/cgroup-v2.rst, "Conventions"). Values are
// unsigned decimals; values above MaxInt64 saturate. Empty lines are
// skipped; a repeated key keeps its last value.
func parseFlatKeyed(data []byte) (map[string]int64, error) {
	out := make(map[string]int64)
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: %q: want \"key value\"", ErrMalformed, n+1, truncate(line))
		}
		v, err := parseUint(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %q: %v", ErrMalformed, n+1, truncate(line), err)
		}
		out[string(fields[0])] = v
	}
	return out, nil
}

// parseSingle parses a single-value file such as memory.peak, pids.current
// or memory.max: an unsigned decimal, or "max" (reported as max=true, v=-1).
func parseSingle(data []byte) (v int64, max bool, err error) {
	s := bytes.TrimSpace(data)
	if string(s) == "max" {
		return -1, true, nil
	}
	v, err = parseUint(s)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %q: %v", ErrMalformed, truncate(s), err)
	}
	return v, false, nil
}

// parsePids parses cgroup.procs or tasks: one positive pid per line.
func parsePids(data []byte) ([]int, error) {
	var out []int
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		s := bytes.TrimSpace(line)
		if len(s) == 0 {
			continue
		}
		v, err := strconv.ParseInt(string(s), 10, 32)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%w: line %d: %q is not a pid", ErrMalformed, n+1, truncate(s))
		}
		out = append(out, int(v))
	}
	return out, nil
}

// parseUint parses an unsigned decimal, saturating at MaxInt64 (v1 files
// print 2^64-1-ish "unlimited" values such as 9223372036854771712).
func parseUint(s []byte) (int64, error) {
	if len(s) == 0 {
		return 0, fmt.Errorf("empty value")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not an unsigned decimal", truncate(s))
		}
	}
	u, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil || u > math.MaxInt64 {
		// Only a range error is possible here: saturate.
		return math.MaxInt64, nil
	}
	return int64(u), nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
