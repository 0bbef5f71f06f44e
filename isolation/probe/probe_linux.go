package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/seccomp"
)

// nsKind is one namespace kind the worker is forked into
// (namespace.CloneFlags).
type nsKind struct {
	layer  string  // layer name
	proc   string  // entry in /proc/PID/ns
	flag   uintptr // CLONE_NEW*
	sysctl string  // /proc/sys/user limit on the number of such namespaces
}

var nsKinds = []nsKind{
	{UserNamespace, "user", unix.CLONE_NEWUSER, "max_user_namespaces"},
	{PIDNamespace, "pid", unix.CLONE_NEWPID, "max_pid_namespaces"},
	{MountNamespace, "mnt", unix.CLONE_NEWNS, "max_mnt_namespaces"},
	{NetNamespace, "net", unix.CLONE_NEWNET, "max_net_namespaces"},
	{IPCNamespace, "ipc", unix.CLONE_NEWIPC, "max_ipc_namespaces"},
	{UTSNamespace, "uts", unix.CLONE_NEWUTS, "max_uts_namespaces"},
	{CgroupNamespace, "cgroup", unix.CLONE_NEWCGROUP, "max_cgroup_namespaces"},
}

// Run probes the host for cfg; see the package doc for what each layer's
// availability means. It forks a short-lived child per namespace kind and
// creates and removes test cgroups; it takes tens of milliseconds.
func Run(cfg Config) Report {
	cfg = cfg.withDefaults()
	var r Report
	for _, k := range nsKinds {
		ok, detail := tryNamespace(cfg, k)
		r.Layers = append(r.Layers, Layer{Name: k.layer, Available: ok, Detail: detail, Required: true})
	}
	probeCgroup(&r, cfg.Cgroup)
	ok, why := seccomp.Supported()
	r.Layers = append(r.Layers, Layer{Name: Seccomp, Available: ok, Detail: why, Required: true})
	r.Layers = append(r.Layers, landlockLayer())
	r.Layers = append(r.Layers, overlayLayer(cfg))
	r.Layers = append(r.Layers, uidRangeLayer(cfg))
	return r
}

// tryNamespace forks cfg.TrialBinary into a new user namespace with the
// sandbox id map and, for the other kinds, a new namespace of kind k, and
// checks that the child's /proc/PID/ns link differs from the prober's.
func tryNamespace(cfg Config, k nsKind) (bool, string) {
	if n, err := readInt(filepath.Join("/proc/sys/user", k.sysctl)); err == nil && n == 0 {
		return false, fmt.Sprintf("user.%s = 0: the kernel allows no new %s namespaces", k.sysctl, k.proc)
	}
	self, err := os.Readlink("/proc/self/ns/" + k.proc)
	if err != nil {
		return false, fmt.Sprintf("kernel has no %s namespaces: %v", k.proc, err)
	}
	size := int(cfg.UIDRangeSize)
	attr := &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(cfg.UIDBase), Size: size}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(cfg.UIDBase), Size: size}},
		GidMappingsEnableSetgroups: true,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
		Pdeathsig:                  syscall.SIGKILL,
	}
	what := "clone(CLONE_NEWUSER)"
	switch k.flag {
	case unix.CLONE_NEWUSER:
	case unix.CLONE_NEWNS:
		// unshare after the id map is written, then mount("/", MS_REC|
		// MS_PRIVATE): the worker's first mount, as user-namespace root.
		attr.Unshareflags = unix.CLONE_NEWNS
		what = "clone(CLONE_NEWUSER), unshare(CLONE_NEWNS), remount / rprivate"
	default:
		attr.Cloneflags |= k.flag
		what = fmt.Sprintf("clone(CLONE_NEWUSER|CLONE_NEW%s)", strings.ToUpper(k.proc))
	}
	cmd := exec.Command(cfg.TrialBinary)
	cmd.SysProcAttr = attr
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return false, fmt.Sprintf("%s: %v", what, err)
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return false, fmt.Sprintf("%s: %v%s", what, err, userNSHint(k))
	}
	child, lerr := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", cmd.Process.Pid, k.proc))
	stdin.Close()
	_ = cmd.Process.Kill()
	_ = cmd.Wait() // killed: the exit status says nothing
	switch {
	case lerr != nil:
		return false, fmt.Sprintf("%s: read the child's namespace: %v", what, lerr)
	case child == self:
		return false, fmt.Sprintf("%s: the child is still in %s", what, self)
	}
	return true, fmt.Sprintf("created %s (%s)", child, what)
}

// userNSHint names the host settings that commonly forbid user namespaces.
func userNSHint(k nsKind) string {
	var hints []string
	if n, err := readInt("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && n == 0 && os.Geteuid() != 0 {
		hints = append(hints, "kernel.unprivileged_userns_clone = 0")
	}
	if n, err := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && n != 0 && os.Geteuid() != 0 {
		hints = append(hints, "kernel.apparmor_restrict_unprivileged_userns = 1")
	}
	if os.Geteuid() != 0 {
		hints = append(hints, "not root: mapping the sandbox uid range needs CAP_SETUID")
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

// probeCgroup appends the cgroup layer and one layer per controller.
func probeCgroup(r *Report, cfg cgroup.Config) {
	pr := cgroup.Probe(cfg)
	r.Warnings = append(r.Warnings, pr.Warnings...)
	l := Layer{Name: Cgroup, Required: true}
	switch {
	case pr.Err != nil:
		l.Detail = pr.Err.Error()
		if p := pr.Placement.String(); p != "" {
			l.Detail += " (" + p + ")"
		}
	case pr.Mode == cgroup.Unavailable:
		l.Detail = "no cgroup hierarchy mounted at " + pr.Root
	default:
		l.Available = true
		l.Detail = fmt.Sprintf("%s at %s", pr.Mode, pr.Root)
		if len(pr.Parents) > 0 {
			l.Detail += ", sandboxes under " + pr.Parents[0]
			if len(pr.Parents) > 1 {
				l.Detail += fmt.Sprintf(" (and %d more controller hierarchies)", len(pr.Parents)-1)
			}
		}
		if p := pr.Placement.String(); p != "" {
			l.Detail += "; " + p
		}
		if m := pr.Missing(); len(m) > 0 {
			l.Available = false
			l.Detail += "; controllers missing or not writable: " + strings.Join(m, ", ")
		}
	}
	r.Layers = append(r.Layers, l)
	for _, c := range pr.Controllers {
		cl := Layer{Name: controllerPrefix + c.Name, Available: c.Available && c.Writable, Required: true, Detail: c.Detail}
		if cl.Available && cl.Detail == "" {
			cl.Detail = "available, test cgroup created and removed"
		} else if cl.Detail == "" {
			cl.Detail = "not available"
		}
		r.Layers = append(r.Layers, cl)
	}
}

// landlockLayer reads the landlock ABI version
// (landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)).
func landlockLayer() Layer {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0 && int(abi) >= 1:
		return Layer{Name: Landlock, Available: true, Required: true, Detail: fmt.Sprintf("ABI %d", int(abi))}
	case errno == unix.ENOSYS:
		return Layer{Name: Landlock, Detail: "not available on this kernel (landlock_create_ruleset: ENOSYS, built without CONFIG_SECURITY_LANDLOCK)"}
	case errno == unix.EOPNOTSUPP:
		return Layer{Name: Landlock, Detail: "not available on this kernel (landlock_create_ruleset: EOPNOTSUPP, not enabled in the lsm= list)"}
	case errno != 0:
		return Layer{Name: Landlock, Detail: "not available on this kernel (landlock_create_ruleset: " + errno.Error() + ")"}
	default:
		return Layer{Name: Landlock, Detail: fmt.Sprintf("not available on this kernel (ABI %d)", int(abi))}
	}
}

// overlayLayer reports whether /proc/filesystems lists overlay.
func overlayLayer(cfg Config) Layer {
	l := Layer{Name: Overlay}
	b, err := os.ReadFile(filepath.Join(cfg.root, "proc/filesystems"))
	switch {
	case err != nil:
		l.Detail = "read /proc/filesystems: " + err.Error()
	case slices.Contains(parseFilesystems(b), "overlay"):
		l.Available, l.Detail = true, "overlay in /proc/filesystems (not used: the root filesystem is bind mounts)"
	default:
		l.Detail = "overlay not in /proc/filesystems (not used: the root filesystem is bind mounts)"
	}
	return l
}

// uidRangeLayer checks that the planned uid ranges fit below 2^32-1 and
// that no process, account, group or subordinate id range uses them.
func uidRangeLayer(cfg Config) Layer {
	l := Layer{Name: UIDRange, Required: true}
	first, last, err := cfg.idSpan()
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	span := idRange{first, last}
	conflicts := uidConflicts(cfg.root, span)
	desc := fmt.Sprintf("%d..%d (%d slots × %d ids)", first, last, cfg.UIDSlots, cfg.UIDRangeSize)
	if len(conflicts) > 0 {
		const show = 3
		more := ""
		if len(conflicts) > show {
			more = fmt.Sprintf(" and %d more", len(conflicts)-show)
			conflicts = conflicts[:show]
		}
		l.Detail = fmt.Sprintf("%s is in use: %s%s (another execfarm supervisor? choose another --uid-base)", desc, strings.Join(conflicts, "; "), more)
		return l
	}
	l.Available = true
	l.Detail = desc + ", used by no process, passwd, group or subuid/subgid entry"
	return l
}

// uidConflicts lists what uses an id in span, under root ("/" on a real
// host): processes' Uid/Gid lines, /etc/passwd and /etc/group ids,
// /etc/subuid and /etc/subgid ranges. Unreadable files are skipped: a
// process may exit while it is read, and the databases may be absent.
func uidConflicts(root string, span idRange) []string {
	var out []string
	in := func(id uint64) bool { return id >= span.first && id <= span.last }
	procs, _ := os.ReadDir(filepath.Join(root, "proc"))
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, "proc", p.Name(), "status"))
		if err != nil {
			continue
		}
		for _, id := range parseStatusIDs(b) {
			if in(id) {
				out = append(out, fmt.Sprintf("pid %d (%s) runs as id %d", pid, statusName(b), id))
				break
			}
		}
	}
	for _, db := range []struct {
		file   string
		fields []int
	}{{"etc/passwd", []int{2, 3}}, {"etc/group", []int{2}}} {
		b, err := os.ReadFile(filepath.Join(root, db.file))
		if err != nil {
			continue
		}
		ids := parseColonIDs(b, db.fields...)
		for _, name := range sortedKeys(ids) {
			for _, id := range ids[name] {
				if in(id) {
					out = append(out, fmt.Sprintf("/%s entry %s has id %d", db.file, name, id))
					break
				}
			}
		}
	}
	for _, file := range []string{"etc/subuid", "etc/subgid"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		subs := parseSubIDs(b)
		for _, name := range sortedKeys(subs) {
			for _, r := range subs[name] {
				if r.overlaps(span) {
					out = append(out, fmt.Sprintf("/%s gives %s %d..%d", file, name, r.first, r.last))
				}
			}
		}
	}
	return out
}

// statusName returns the Name: line of a /proc/PID/status file.
func statusName(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// readInt reads a file holding one integer (a sysctl).
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}
