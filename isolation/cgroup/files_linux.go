package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// readFile reads at most maxFileBytes of a cgroup file.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFileBytes))
}

// readKeyed reads and parses a flat keyed file.
func readKeyed(path string) (map[string]int64, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	kv, err := parseFlatKeyed(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return kv, nil
}

// readSingle reads and parses a single-value file ("max" is -1).
func readSingle(path string) (int64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	v, _, err := parseSingle(b)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

// writeExisting writes value to a file that must already exist: a cgroup
// interface file is created by the kernel, never by us, so a missing file
// is an error here rather than a silently created plain file.
func writeExisting(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// readProcsTree returns the pids in cgroup.procs of dir and every
// descendant cgroup. A missing dir yields none.
func readProcsTree(dir string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := readFile(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		pids, err := parsePids(b)
		if err != nil {
			return fmt.Errorf("parse %s: %w", filepath.Join(p, "cgroup.procs"), err)
		}
		out = append(out, pids...)
		return nil
	})
	return out, err
}

// removeTimeout bounds Delete's wait for killed processes to leave
// cgroup.procs and its retries of rmdir on EBUSY: a cgroup stays busy
// until its last killed process has exited, which takes a moment for most
// and seconds for one that held tens of thousands of mapped files (the
// file-table hostile test measured over 2 s on a host; under the cgroup
// v2 VM's emulated CPU, seven processes of 5000 files each took over
// 10 s, and a shorter bound, Kill's 5 s, left their cgroup behind for
// good). The retries back off from 10 ms to 250 ms; whoever removes
// waits, holding what the sandbox holds (its uid range, its slot), which
// is what must happen until its processes are gone. Past the bound the
// removal fails, is logged and counted, and the next start's Cleanup
// removes the rest. Cleanup itself waits at most cleanupTimeout for all
// the leftovers it finds: a start must stay within its startup probe's
// 2 minutes.
const (
	removeTimeout  = 5 * time.Minute
	cleanupTimeout = 30 * time.Second
)

// removeTree removes the cgroup dir and its descendants, deepest first. On
// cgroupfs a cgroup is removed with rmdir alone (its files are not real);
// on a plain directory (a fake tree in a test) the files are removed first.
// A missing dir is not an error.
func removeTree(dir string) error { return removeTreeBy(dir, time.Now().Add(removeTimeout)) }

// removeTreeBy is removeTree, retrying EBUSY until deadline.
func removeTreeBy(dir string, deadline time.Time) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	plain := !isCgroupFS(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if err := removeTreeBy(p, deadline); err != nil {
				return err
			}
		case plain:
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove cgroup %s: %w", dir, err)
			}
		}
	}
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 250*time.Millisecond) {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			time.Sleep(pause)
		default:
			return fmt.Errorf("remove cgroup %s: %w", dir, &os.PathError{Op: "rmdir", Path: dir, Err: err})
		}
	}
}

func isCgroupFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC
}

// activeSwapDevices counts the swap devices listed in /proc/swaps.
func activeSwapDevices() int {
	b, err := readFile("/proc/swaps")
	if err != nil {
		return 0
	}
	n := -1 // header line
	for _, line := range splitLines(b) {
		if len(line) > 0 {
			n++
		}
	}
	return max(n, 0)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, b[start:])
	}
	return out
}

// swapWarning explains a missing swap limit file.
func swapWarning(file string) string {
	if n := activeSwapDevices(); n > 0 {
		return fmt.Sprintf("%s is absent (swap accounting off) and %d swap device(s) are active: sandbox memory can be swapped out beyond the memory limit", file, n)
	}
	return fmt.Sprintf("%s is absent (swap accounting off); no swap device is active, so sandbox swap use is still 0", file)
}

// tcpWarning explains a missing v1 memory.kmem.tcp.limit_in_bytes.
const tcpWarning = "memory.kmem.tcp.limit_in_bytes is absent: on cgroup v1 TCP socket buffers are not charged to memory.usage_in_bytes and stay unbounded per sandbox (only the host-wide net.ipv4.tcp_mem bounds them)"
