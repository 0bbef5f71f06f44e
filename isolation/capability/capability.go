package capability

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
)

// Cap is a capability number as in <linux/capability.h>.
type Cap uint

// The capabilities the worker keeps. Numbers are the kernel ABI.
const (
	Kill    Cap = 5 // CAP_KILL: signal processes of another uid
	SetGID  Cap = 6 // CAP_SETGID: setgid, setgroups
	SetUID  Cap = 7 // CAP_SETUID: setuid
	SetPCap Cap = 8 // CAP_SETPCAP: needed to shrink the bounding set
)

// Set is a set of capabilities as a bit mask: bit n is capability n, the
// layout of the Cap* lines of /proc/<pid>/status. The zero Set is empty.
type Set uint64

// Of returns the set holding caps.
func Of(caps ...Cap) Set {
	var s Set
	for _, c := range caps {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c Cap) bool { return c < 64 && s&(1<<c) != 0 }

// Len returns how many capabilities s holds.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// String formats s as /proc does: 16 hexadecimal digits.
func (s Set) String() string { return fmt.Sprintf("%016x", uint64(s)) }

// State is the five capability sets of one thread.
type State struct {
	Inheritable, Permitted, Effective, Bounding, Ambient Set
}

// statusKeys maps the /proc/<pid>/status keys to the State field they fill.
var statusKeys = []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// ParseStatus reads the CapInh, CapPrm, CapEff, CapBnd and CapAmb lines of a
// /proc/<pid>/status text (proc(5)). Every one of the five must be present
// exactly once with a hexadecimal value; otherwise the error wraps
// ErrStatus.
func ParseStatus(r io.Reader) (State, error) {
	var st State
	fields := []*Set{&st.Inheritable, &st.Permitted, &st.Effective, &st.Bounding, &st.Ambient}
	seen := make([]bool, len(fields))
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for i, k := range statusKeys {
			if key != k {
				continue
			}
			if seen[i] {
				return State{}, fmt.Errorf("%w: %s twice", ErrStatus, k)
			}
			v, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
			if err != nil {
				return State{}, fmt.Errorf("%w: %s: %v", ErrStatus, k, err)
			}
			*fields[i], seen[i] = Set(v), true
		}
	}
	if err := sc.Err(); err != nil {
		return State{}, fmt.Errorf("read status: %w", err)
	}
	for i, ok := range seen {
		if !ok {
			return State{}, fmt.Errorf("%w: no %s line", ErrStatus, statusKeys[i])
		}
	}
	return st, nil
}
