package probe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/execfarm/execfarm/isolation/cgroup"
)

// Defaults used when a Config field is zero. They match the supervisor's.
const (
	// DefaultUIDBase is the first host uid of the sandbox uid ranges (2^30):
	// far above ordinary users and the /etc/subuid ranges tools hand out
	// from 100000.
	DefaultUIDBase uint32 = 1 << 30
	// DefaultUIDRangeSize is the number of host ids each sandbox gets.
	DefaultUIDRangeSize uint32 = 65536
	// DefaultUIDSlots is the number of uid ranges, one per live sandbox.
	DefaultUIDSlots = 64
	// DefaultTrialBinary is forked into each trial namespace; it blocks
	// reading its stdin until the prober kills it.
	DefaultTrialBinary = "/bin/cat"
	// maxID is the highest valid uid/gid: (uid_t)-1 = 2^32-1 means "no
	// change" to the kernel and is never a real id.
	maxID = 1<<32 - 2
)

// Layer names. Names lists them all; the cgroup controllers a host reports
// depend on its cgroup version.
const (
	UserNamespace   = "user-namespace"
	PIDNamespace    = "pid-namespace"
	MountNamespace  = "mnt-namespace"
	NetNamespace    = "net-namespace"
	IPCNamespace    = "ipc-namespace"
	UTSNamespace    = "uts-namespace"
	CgroupNamespace = "cgroup-namespace"
	Cgroup          = "cgroup"
	Seccomp         = "seccomp"
	Landlock        = "landlock"
	Overlay         = "overlay"
	UIDRange        = "uid-range"
)

// controllerPrefix names a cgroup controller's layer: "cgroup-memory".
const controllerPrefix = "cgroup-"

// allControllers are the controllers any cgroup version may report
// (cgroup.Probe: memory, cpu, cpuacct, pids, freezer on v1; memory, cpu,
// pids on v2).
var allControllers = []string{"memory", "cpu", "cpuacct", "pids", "freezer"}

// notDegradable says, for every layer the supervisor cannot run without,
// why. A name absent here and present in Names may be degraded.
var notDegradable = map[string]string{
	UserNamespace:   "the worker is always forked into a new user namespace; without it sandbox root is host root",
	PIDNamespace:    "the worker is always forked into every namespace",
	MountNamespace:  "the worker is always forked into every namespace",
	NetNamespace:    "the worker is always forked into every namespace",
	IPCNamespace:    "the worker is always forked into every namespace",
	UTSNamespace:    "the worker is always forked into every namespace",
	CgroupNamespace: "the worker is always forked into every namespace",
	Cgroup:          "sandboxes need a cgroup to be killed and limited",
	Landlock:        "the worker applies landlock wherever the kernel has it",
	Overlay:         "overlay is information only",
	UIDRange:        "a sandbox must never share a host uid with another sandbox or a host user; choose a free --uid-base",
}

// Names returns every layer name Run can report, in report order.
func Names() []string {
	names := []string{UserNamespace, PIDNamespace, MountNamespace, NetNamespace, IPCNamespace, UTSNamespace, CgroupNamespace, Cgroup}
	for _, c := range allControllers {
		names = append(names, controllerPrefix+c)
	}
	return append(names, Seccomp, Landlock, Overlay, UIDRange)
}

// Degradable reports whether the supervisor can run without the layer
// called name when the operator allows it, and if not, why.
func Degradable(name string) (bool, string) {
	if why, ok := notDegradable[name]; ok {
		return false, why
	}
	if strings.HasPrefix(name, controllerPrefix) {
		return false, "sandboxes need every cgroup controller to be limited and accounted"
	}
	return slices.Contains(Names(), name), ""
}

// Config says what Run probes. The zero value probes the production
// defaults.
type Config struct {
	// Cgroup is where sandbox cgroups will live; probed with cgroup.Probe,
	// which creates and removes a test cgroup under its Parent.
	Cgroup cgroup.Config
	// UIDBase is the first host uid (and gid) of the sandbox ranges; the
	// namespace trials map their user namespace's 0 to it. 0 =
	// DefaultUIDBase.
	UIDBase uint32
	// UIDRangeSize is the number of ids per sandbox. 0 =
	// DefaultUIDRangeSize.
	UIDRangeSize uint32
	// UIDSlots is the number of ranges, one per live sandbox. 0 =
	// DefaultUIDSlots.
	UIDSlots int
	// TrialBinary is the absolute path of the program forked into each
	// trial namespace; it must block (reading stdin is enough) until
	// killed. "" = DefaultTrialBinary.
	TrialBinary string

	// root prefixes /proc and /etc for the uid-range scan; "" = "/".
	// Only this package's tests set it, to a fake tree.
	root string
}

func (c Config) withDefaults() Config {
	if c.UIDBase == 0 {
		c.UIDBase = DefaultUIDBase
	}
	if c.UIDRangeSize == 0 {
		c.UIDRangeSize = DefaultUIDRangeSize
	}
	if c.UIDSlots == 0 {
		c.UIDSlots = DefaultUIDSlots
	}
	if c.TrialBinary == "" {
		c.TrialBinary = DefaultTrialBinary
	}
	if c.root == "" {
		c.root = "/"
	}
	return c
}

// idSpan returns the first and last host id of the planned ranges, or an
// error when they do not fit below 2^32-1.
func (c Config) idSpan() (first, last uint64, err error) {
	c = c.withDefaults()
	if c.UIDSlots < 0 {
		return 0, 0, fmt.Errorf("%d uid slots", c.UIDSlots)
	}
	first = uint64(c.UIDBase)
	last = first + uint64(c.UIDSlots)*uint64(c.UIDRangeSize) - 1
	if last > maxID {
		return first, last, fmt.Errorf("%d..%d (%d slots × %d) ends above %d, the highest valid id", first, last, c.UIDSlots, c.UIDRangeSize, uint64(maxID))
	}
	return first, last, nil
}

// Layer is the probe's finding for one isolation layer.
type Layer struct {
	// Name is one of Names(): "user-namespace", "cgroup-memory", ...
	Name string
	// Available: the host provides the layer (see the package doc for
	// what was tried).
	Available bool
	// Detail is the version, path or count found, or why the layer is
	// missing.
	Detail string
	// Required: the supervisor refuses to start without the layer unless
	// the operator allows it (and it can be degraded). false for
	// information-only layers.
	Required bool
}

// Report is what Run found on the host.
type Report struct {
	// Layers are in Names() order; cgroup controllers are those of the
	// host's cgroup version.
	Layers []Layer
	// Warnings are facts that weaken a guarantee or change a figure's
	// source without making the host unusable (cgroup.ProbeResult).
	Warnings []string
}

// Status is a layer's state once the operator's choice is applied.
type Status string

// Values of Status.
const (
	// StatusOK: available and used.
	StatusOK Status = "ok"
	// StatusMissing: required and not available; the supervisor refuses
	// to start.
	StatusMissing Status = "missing"
	// StatusDegradedAllowed: named in --allow-degraded; the supervisor
	// runs without it whether or not the host has it.
	StatusDegradedAllowed Status = "degraded-allowed"
	// StatusInfo: not required; reported for information.
	StatusInfo Status = "info"
)

// Resolved is a layer with the operator's --allow-degraded applied.
type Resolved struct {
	Layer
	// Status is the layer's state.
	Status Status
	// Active: the supervisor uses the layer for every sandbox.
	Active bool
}

// MissingError is returned by Report.Missing and Report.Resolve when
// required layers are missing and not allowed to be; it wraps
// ErrHostCannotIsolate.
type MissingError struct {
	// Layers are the missing layers, in report order.
	Layers []Layer
}

func (e *MissingError) Error() string {
	var b strings.Builder
	b.WriteString(ErrHostCannotIsolate.Error())
	b.WriteString(": missing ")
	for i, l := range e.Layers {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s", l.Name, l.Detail)
		if ok, why := Degradable(l.Name); ok {
			fmt.Fprintf(&b, "; use --allow-degraded=%s to run without it", l.Name)
		} else {
			fmt.Fprintf(&b, "; cannot be degraded: %s", why)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns ErrHostCannotIsolate.
func (e *MissingError) Unwrap() error { return ErrHostCannotIsolate }

// ParseAllowDegraded checks the operator's --allow-degraded values and
// returns the layer names, each once, in the order given. A value may hold
// several names separated by commas; spaces around names and empty names
// are ignored. An unknown name is an error wrapping ErrUnknownLayer, a
// layer that cannot be degraded an error wrapping ErrNotDegradable: a typo
// must never start a supervisor the operator did not ask for.
func ParseAllowDegraded(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" || slices.Contains(out, name) {
				continue
			}
			if !slices.Contains(Names(), name) {
				return nil, fmt.Errorf("%w: --allow-degraded=%q (layers: %s)", ErrUnknownLayer, name, strings.Join(Names(), ", "))
			}
			if ok, why := Degradable(name); !ok {
				return nil, fmt.Errorf("%w: --allow-degraded=%s: %s", ErrNotDegradable, name, why)
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// Resolve applies allowDegraded to every layer. It always returns the
// layers (with nothing allowed when allowDegraded is invalid) and an error
// when the supervisor must not start: allowDegraded invalid
// (ParseAllowDegraded), or a *MissingError naming every required layer
// that is missing and not allowed.
func (r Report) Resolve(allowDegraded []string) ([]Resolved, error) {
	allowed, perr := ParseAllowDegraded(allowDegraded)
	var out []Resolved
	var missing []Layer
	for _, l := range r.Layers {
		rl := Resolved{Layer: l}
		switch {
		case slices.Contains(allowed, l.Name):
			rl.Status = StatusDegradedAllowed
		case !l.Required:
			rl.Status = StatusInfo
		case l.Available:
			rl.Status, rl.Active = StatusOK, true
		default:
			rl.Status = StatusMissing
			missing = append(missing, l)
		}
		out = append(out, rl)
	}
	if perr != nil {
		return out, perr
	}
	if len(missing) > 0 {
		return out, &MissingError{Layers: missing}
	}
	return out, nil
}

// Missing returns nil when the supervisor may start with allowDegraded,
// else the error of Resolve: a *MissingError wrapping ErrHostCannotIsolate
// that names every missing required layer not allowed, or an error
// wrapping ErrUnknownLayer or ErrNotDegradable.
func (r Report) Missing(allowDegraded []string) error {
	_, err := r.Resolve(allowDegraded)
	return err
}

// Layer returns the layer called name and whether the report has it.
func (r Report) Layer(name string) (Layer, bool) {
	for _, l := range r.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}
