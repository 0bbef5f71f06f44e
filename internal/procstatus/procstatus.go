// Package procstatus reads fields of /proc/PID/status (proc(5)).
package procstatus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Field returns the value of field (e.g. "NSpid", "VmRSS") in
// /proc/PID/status, spaces trimmed; pid 0 is the calling process. Errors:
// the file's, or one naming a field the file lacks.
func Field(pid int, field string) (string, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no %s in %s", field, path)
}

// Bytes returns a memory field (VmRSS, VmHWM, …; kB in the file) in
// bytes; pid 0 is the calling process.
func Bytes(pid int, field string) (int64, error) {
	v, err := Field(pid, field)
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return kb << 10, nil
}
