package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"

	cgroups "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
)

// detectMode caches the host's cgroup mode, a fixed host fact.
var detectMode = sync.OnceValue(func() Mode {
	switch cgroups.Mode() {
	case cgroups.Legacy, cgroups.Hybrid:
		// Hybrid hosts keep the controllers on v1; their unified mount
		// has none (or only a few) to offer.
		return V1
	case cgroups.Unified:
		return V2
	default:
		return Unavailable
	}
})

// DetectMode returns the host's cgroup mode from containerd's
// cgroups.Mode() (statfs of /sys/fs/cgroup): V1 for legacy and hybrid
// hosts, V2 for unified ones. The result is computed once per process.
func DetectMode() Mode { return detectMode() }

// v1Controllers are the v1 controllers a sandbox cgroup is created in, in
// this order.
var v1Controllers = []cgroup1.Name{cgroup1.Memory, cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Pids, cgroup1.Freezer}

// v2Controllers are the v2 controllers enabled for sandbox cgroups.
var v2Controllers = []string{"memory", "cpu", "pids"}

// unified is the single key of layout.parents on v2.
const unified = ""

// layout is a resolved Config: where the parent of the sandbox cgroups is,
// per v1 controller or once on v2.
type layout struct {
	mode Mode
	root string
	// parents maps a v1 controller name (or unified on v2) to the
	// parent's group path relative to that hierarchy's root.
	parents map[string]string
	// afterMkdir is Config.afterMkdir.
	afterMkdir func(dir string) error
	// placement is where the supervisor sits on v2 with a nested parent
	// (Place); zero otherwise.
	placement Placement
}

// resolvedParents caches resolve's parents per (mode, root, parent,
// absolute, no-place): resolving a nested parent reads /proc/self/cgroup
// and /proc/self/mountinfo, about 1 ms per sandbox on v1, and places the
// supervisor on v2 (Place). The supervisor's own cgroup is thus read once;
// a supervisor moved to another cgroup while it runs keeps creating
// sandboxes under the parent it resolved first. A v2 placement not made
// (Config.NoPlace) is not cached.
var resolvedParents sync.Map // string -> resolved

func resolve(cfg Config) (layout, error) {
	cfg = cfg.withDefaults()
	if cfg.Mode == Unavailable {
		cfg.Mode = DetectMode()
	}
	key := fmt.Sprintf("%d\x00%s\x00%s\x00%t\x00%t", cfg.Mode, cfg.Root, cfg.Parent, cfg.AbsoluteParent, cfg.NoPlace)
	if r, ok := resolvedParents.Load(key); ok {
		r := r.(resolved)
		return layout{mode: cfg.Mode, root: cfg.Root, parents: r.parents, placement: r.placement, afterMkdir: cfg.afterMkdir}, nil
	}
	l, err := resolveParents(cfg)
	if err == nil && (l.mode != V2 || cfg.AbsoluteParent || l.placement.Done) {
		resolvedParents.Store(key, resolved{l.parents, l.placement})
	}
	return l, err
}

// resolved is a cached resolution (resolvedParents).
type resolved struct {
	parents   map[string]string // read-only
	placement Placement
}

// resolveParents is resolve without the cache.
func resolveParents(cfg Config) (layout, error) {
	l := layout{mode: cfg.Mode, root: cfg.Root, parents: map[string]string{}, afterMkdir: cfg.afterMkdir}
	switch cfg.Mode {
	case V1:
		var nested cgroup1.Path
		if !cfg.AbsoluteParent {
			nested = cgroup1.NestedPath(cfg.Parent)
		}
		for _, n := range v1Controllers {
			if cfg.AbsoluteParent {
				l.parents[string(n)] = cfg.Parent
				continue
			}
			p, err := nested(n)
			if errors.Is(err, cgroup1.ErrControllerNotActive) {
				return l, fmt.Errorf("resolve parent cgroup in %s: %w: %v", n, ErrControllerMissing, err)
			}
			if err != nil {
				return l, fmt.Errorf("resolve parent cgroup in %s: %w", n, err)
			}
			l.parents[string(n)] = p
		}
	case V2:
		if cfg.AbsoluteParent {
			l.parents[unified] = cfg.Parent
			break
		}
		p, err := place(cfg.Root, cfg.NoPlace)
		l.placement = p
		if err != nil {
			return l, fmt.Errorf("place the supervisor in cgroup v2: %w", err)
		}
		l.parents[unified] = path.Join(p.Own, cfg.Parent)
	default:
		return l, fmt.Errorf("%w: mode %s under %s", ErrUnavailable, cfg.Mode, cfg.Root)
	}
	return l, nil
}

// controllers returns the keys of parents in a fixed order.
func (l layout) controllers() []string {
	if l.mode == V2 {
		return []string{unified}
	}
	out := make([]string, 0, len(v1Controllers))
	for _, n := range v1Controllers {
		out = append(out, string(n))
	}
	return out
}

// parentDir is the absolute parent directory in controller c.
func (l layout) parentDir(c string) string {
	return filepath.Join(l.root, c, l.parents[c])
}

// group is the sandbox's group path relative to controller c's root.
func (l layout) group(c, name string) string {
	return path.Join(l.parents[c], name)
}

// dirs returns the absolute directories of sandbox name, keyed like
// parents.
func (l layout) dirs(name string) map[string]string {
	out := make(map[string]string, len(l.parents))
	for c := range l.parents {
		out[c] = filepath.Join(l.parentDir(c), name)
	}
	return out
}

// mkdir creates one cgroup directory (an existing one is an error).
func (l layout) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if l.afterMkdir != nil {
		return l.afterMkdir(dir)
	}
	return nil
}

// mkdirParents creates dir and its missing ancestors, shallowest first, and
// returns the ones it created, deepest first.
func (l layout) mkdirParents(dir string) (created []string, err error) {
	for d := filepath.Clean(dir); !exists(d); d = filepath.Dir(d) {
		created = append(created, d)
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := l.mkdir(created[i]); err != nil && !errors.Is(err, os.ErrExist) {
			return created[i+1:], fmt.Errorf("create parent cgroup %s: %w", created[i], err)
		}
	}
	return created, nil
}
