package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/opencontainers/runc/libcontainer/exeseal"
	"golang.org/x/sys/unix"
)

// SealedBinary is a sealed in-memory copy of an executable: a memfd that
// runc's exeseal has filled and sealed against writing, shrinking and
// growing (F_SEAL_WRITE|F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL). The
// supervisor executes every worker from it, so the worker's
// /proc/<pid>/exe names the copy, never the host file: a sandbox that
// opens that link for writing (CVE-2019-5736) meets a sealed file, and
// the host binary is never reachable through it. The copy is made once
// per supervisor process and lives as long as the process.
type SealedBinary struct {
	source string
	f      *os.File
}

// sealed caches the sealed copy of each worker binary path for the life of
// the process: a supervisor starts every sandbox from one copy, made at
// first use (copying a 30 MB binary costs tens of milliseconds, so never
// per sandbox). The copy is a process-wide resource like an open file,
// which is why it is not held in Config (copied by value by callers).
var sealed = struct {
	sync.Mutex
	m map[string]*SealedBinary
}{m: map[string]*SealedBinary{}}

// execFDMin is the lowest descriptor number the sealed copy is kept at.
// The worker is executed through /proc/self/fd/N in the forked child, after
// Go has moved the child's descriptors into place (0..len(ExtraFiles)+2,
// plus a few temporaries above them); N must stay clear of those.
const execFDMin = 100

// Seal returns the sealed copy of the executable at path, creating it at
// the first call for that path; later calls return the same copy, even if
// the file at path has changed since. A supervisor should call it once at
// start-up so that the first sandbox does not pay for the copy and a bad
// worker binary is reported at once; Start calls it too. The error says
// why no sealed memfd could be made: exeseal's non-memfd fallbacks
// (O_TMPFILE, unlinked files) cannot be sealed and are refused.
func Seal(path string) (*SealedBinary, error) {
	sealed.Lock()
	defer sealed.Unlock()
	if b, ok := sealed.m[path]; ok {
		return b, nil
	}
	b, err := seal(path)
	if err != nil {
		return nil, err
	}
	sealed.m[path] = b
	return b, nil
}

func seal(path string) (*SealedBinary, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seal worker binary: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seal worker binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("sandbox: seal worker binary: %s is not an executable file (mode %v)", path, fi.Mode())
	}
	f, err := exeseal.CloneBinary(src, fi.Size(), "execfarm-worker", os.TempDir())
	if err != nil {
		return nil, fmt.Errorf("sandbox: seal worker binary %s: %w", path, err)
	}
	if !exeseal.IsCloned(f) {
		f.Close()
		return nil, fmt.Errorf("sandbox: seal worker binary %s: no sealed memfd (kernel without memfd sealing?)", path)
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, execFDMin)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seal worker binary: %w", os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err))
	}
	return &SealedBinary{source: path, f: os.NewFile(uintptr(fd), "execfarm-worker (sealed)")}, nil
}

// File returns the copy's descriptor, for the fork server
// (forkserver.Spawn.Exe). The caller must not close it.
func (b *SealedBinary) File() *os.File { return b.f }

// Source returns the host path the copy was made from.
func (b *SealedBinary) Source() string { return b.source }

// ExecPath returns the path through which a child forked by this process
// executes the copy: /proc/self/fd/N, with N >= 100 and close-on-exec set,
// so the copy's descriptor does not outlive the exec.
func (b *SealedBinary) ExecPath() string { return "/proc/self/fd/" + strconv.Itoa(int(b.f.Fd())) }
