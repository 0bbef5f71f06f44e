package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/rootfs"
)

// Config is the supervisor-wide configuration of sandboxes.
type Config struct {
	// WorkerBinary is the host path of the execfarm-worker binary.
	WorkerBinary string
	// GojaBinary is the host path of the goja runtime binary, bound
	// read-only into every sandbox; "" = GojaBinaryName next to
	// WorkerBinary, else next to the file WorkerBinary links to.
	GojaBinary string
	// StateDir is the host directory holding one sub-directory per live
	// sandbox (plugin socket, root mountpoint). "" = /run/execfarm.
	StateDir string
	// Cgroup says where sandbox cgroups live (zero value: detect, nest
	// under the supervisor's own cgroup).
	Cgroup cgroup.Config
	// IDs hands out host uid ranges; required.
	IDs *IDPool
	// Binds are host directories bound read-only into every sandbox (the
	// node runtime bundle at /.execfarm/node).
	Binds []rootfs.Bind
	// Broker enables the go-plugin broker (multiplexed over the plugin's
	// socket) so that the supervisor can serve the HostProxy to workers.
	Broker bool
	// NoSeccomp disables the seccomp filter. Only an operator's explicit
	// --allow-degraded=seccomp sets it.
	NoSeccomp bool
	// PlaceByGate makes workers place each runtime process in the payload
	// cgroup after forking it, held at a gate until then, as on cgroup v2,
	// even on v1 where the forking thread joins the payload instead (see
	// cgroup.Manager.PayloadTasks). For tests of the v2 path on v1 hosts.
	PlaceByGate bool
	// StartTimeout bounds the worker's start-up; 0 = 10 s.
	StartTimeout time.Duration
	// Logger receives worker logs; nil = hclog's default, level Warn.
	Logger hclog.Logger
}

// ProcessGoroutines are functions of the goroutines a process keeps once
// it has started a sandbox, for its whole life: the spawner, locked to
// the thread that forks the fork server, and the fork server's client
// reader (package isolation/forkserver). Leak checks ignore goroutines
// with any of them on their stack (goleak.IgnoreAnyFunction).
var ProcessGoroutines = []string{
	"github.com/execfarm/execfarm/supervisor/sandbox.(*spawner).loop",
	"github.com/execfarm/execfarm/isolation/forkserver.(*Client).read",
}

// ProcessFDs returns the descriptors a process keeps, for its whole life,
// once it has started a sandbox: the sealed copy of each worker binary
// (Seal), and the socket to its fork server and the fork server's pidfd.
// Leak checks ignore them (leakcheck.IgnoreFDs); empty off Linux.
func ProcessFDs() []int { return processFDs() }

// WorkerPidsReserve is how many tasks the sandbox cgroup allows beyond
// Spec.Limits.PidsMax: the worker's own threads, outside the payload cgroup
// that holds the program's processes.
const WorkerPidsReserve = 64

// Phase is one timed step of a sandbox's start-up (Sandbox.StartPhases,
// Sandbox.WorkerPhases).
type Phase struct {
	Name     string
	Duration time.Duration
}

// LogFields renders phases as hclog key/value pairs ("cgroup_ms", 1.2,
// ...), for debug logs.
func LogFields(phases []Phase) []any {
	out := make([]any, 0, 2*len(phases))
	for _, p := range phases {
		out = append(out, p.Name+"_ms", float64(p.Duration.Microseconds())/1000)
	}
	return out
}

// Spec is what one sandbox gets.
type Spec struct {
	// Limits are set on the sandbox cgroup before the worker starts;
	// PidsMax limits the program's processes (the payload cgroup).
	Limits cgroup.Limits
	// WorkspaceBytes, TmpBytes, ShmBytes size the tmpfs mounts of
	// /workspace, /tmp and /dev/shm in bytes; 0 = 64 MiB each. ShmBytes
	// also bounds the System V shared memory of the sandbox's IPC
	// namespace (sysvipc.LimitsFor).
	WorkspaceBytes, TmpBytes, ShmBytes int64
	// FileDescriptors is the RLIMIT_NOFILE the sandbox's runtime processes
	// get (0 = unset). The worker sets rlimits on itself before it forks
	// and cannot raise them again (it keeps no CAP_SYS_RESOURCE), so a
	// sandbox that has forked a process (a warm one) serves only requests
	// with its rlimits: this field, and WorkspaceBytes for RLIMIT_FSIZE.
	FileDescriptors int64
	// Session makes a session sandbox: kept across many execs and file
	// operations until Close, running up to MaxConcurrentExecs execs at
	// once (Sandbox.Exec, each in its own cgroup below the payload),
	// serving Upload, Download, List, Stat, Remove and Mkdir, and refusing
	// Run, Prepare and Reset (ErrNotSession); a single-use sandbox refuses
	// the session calls likewise. It needs Limits.PidsMax. A warm pool of
	// another Spec never serves it (Spec equality).
	Session bool
}

// sessionWindowBytes and sessionConnWindowBytes are the HTTP/2 flow
// control windows of the supervisor's connection to a session sandbox's
// worker (per stream, per connection). Fixed windows (grpc-go's BDP
// estimation, off when they are set, would grow them to 16 MiB) bound what
// the supervisor buffers of a download its client reads slowly: at most
// 1 MiB per sandbox.
const (
	sessionWindowBytes     = 256 << 10
	sessionConnWindowBytes = 1 << 20
)

// maxSocketPath is the longest unix socket path (sun_path, 108 bytes with
// its NUL).
const maxSocketPath = 107

// socketPathBudget is how long the state directory's path part of a plugin
// socket path ("STATE/sb/sb-<16 hex>/plugin-dir<10 digits>/plugin<10
// digits>") may be.
const socketPathBudget = maxSocketPath - len("/sb/sb-0123456789abcdef/plugin-dir0123456789/plugin0123456789")

// GojaBinaryName is the file name of the goja runtime binary, looked for
// next to the worker binary when Config.GojaBinary is "".
const GojaBinaryName = "execfarm-goja"

// Validate checks what can be checked before any sandbox starts: a
// worker binary and a goja runtime binary, the uid ranges, and a state
// directory short enough that plugin socket paths fit in a unix socket
// address.
func (c *Config) Validate() error {
	if err := c.ValidateBinaries(); err != nil {
		return err
	}
	if c.IDs == nil {
		return errors.New("sandbox: Config.IDs is nil")
	}
	d := c.stateDir()
	if len(d) > socketPathBudget {
		return fmt.Errorf("sandbox: state directory %q is %d bytes; at most %d fit in a unix socket path", d, len(d), socketPathBudget)
	}
	if err := MakeStateDir(d); err != nil {
		return err
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return fmt.Errorf("sandbox: state directory %q is not a directory", d)
	}
	return searchableByOthers(d)
}

// MakeStateDir creates the state directory dir, which must be absolute
// (sandboxes reach it by its host path), with every missing parent, as
// mode 0711 whatever the umask: sandbox workers, running as unprivileged
// uids, pass through them.
func MakeStateDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("sandbox: state directory %q is not an absolute path", dir)
	}
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
			break
		}
		missing = append(missing, p)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("sandbox: state directory: %w", err)
	}
	for _, p := range missing {
		if err := os.Chmod(p, 0o711); err != nil {
			return fmt.Errorf("sandbox: state directory: %w", err)
		}
	}
	return nil
}

// searchableByOthers checks that an unprivileged uid with no other right
// may pass through each directory above dir (mode o+x), both along dir as
// written and along the path its symlinks resolve to: a sandbox's worker,
// running as such a uid, reaches its plugin socket in the state directory
// by its host path. (Start makes the state directory itself 0711.)
// Without this check a state directory under, say, a 0700 mktemp
// directory fails every sandbox start with a bare "permission denied"
// from inside the worker.
func searchableByOthers(dir string) error {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("sandbox: state directory: %w", err)
	}
	for _, path := range []string{dir, resolved} {
		for p := filepath.Dir(filepath.Clean(path)); ; p = filepath.Dir(p) {
			fi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("sandbox: state directory: %w", err)
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return fmt.Errorf("sandbox: state directory %q: %s (mode %#o) is not searchable by other users (o+x); sandbox workers run as unprivileged uids and must pass through it to their sockets", dir, p, fi.Mode().Perm())
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return nil
}

// ValidateBinaries checks the worker binary is set and the goja runtime
// binary (GojaBinary or its default) is an ELF executable the sandbox user
// may run. It returns the goja binary's path in its error.
func (c *Config) ValidateBinaries() error {
	if c.WorkerBinary == "" {
		return errors.New("sandbox: no worker binary")
	}
	if err := checkRuntimeBinary(c.gojaBinary()); err != nil {
		return fmt.Errorf("sandbox: goja runtime binary: %w (it is built with the worker: go build ./cmd/...; set its path with EXECFARM_GOJA)", err)
	}
	return nil
}

// GojaPath returns the host path of the goja runtime binary that sandboxes
// get: GojaBinary, or its default.
func (c *Config) GojaPath() string { return c.gojaBinary() }

func (c *Config) gojaBinary() string {
	if c.GojaBinary != "" {
		return c.GojaBinary
	}
	next := filepath.Join(filepath.Dir(c.WorkerBinary), GojaBinaryName)
	if _, err := os.Stat(next); err != nil {
		if target, err := filepath.EvalSymlinks(c.WorkerBinary); err == nil {
			if p := filepath.Join(filepath.Dir(target), GojaBinaryName); p != next {
				if _, err := os.Stat(p); err == nil {
					return p
				}
			}
		}
	}
	return next
}

// checkRuntimeBinary checks that path is an ELF executable that the sandbox
// user (an unmapped "other" uid on the host) may execute.
func checkRuntimeBinary(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("%s is not executable by other users (mode %v): sandboxes run it as an unprivileged uid", path, fi.Mode().Perm())
	}
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "\x7fELF" {
		return fmt.Errorf("%s is not an ELF executable", path)
	}
	return nil
}

func (c *Config) stateDir() string {
	if c.StateDir == "" {
		return "/run/execfarm"
	}
	return c.StateDir
}

func (c *Config) startTimeout() time.Duration {
	if c.StartTimeout <= 0 {
		return 10 * time.Second
	}
	return c.StartTimeout
}
