package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/isolation/probe"
)

// testHost is what the tests of this process set up once on the host: a
// cgroup parent, a state directory and a uid window of their own.
var testHost sandboxHost

type sandboxHost struct {
	once sync.Once
	cfg  *Config
	skip string
	err  error
	dir  string
}

// sandboxSlots is the uid window of the tests: 8 ranges of 65536 ids,
// placed from 3.5·2^30 by the process's pid (the integration suite uses
// 2^31 on, the hostile suite 3·2^30 on), so that two test processes never
// share a host uid.
const sandboxSlots = 8

// requireSandbox returns a Config for real sandboxes, skipping when the
// host lacks a layer (not root, no user namespaces, no cgroup) and
// failing when the probe finds every layer but setting up fails.
func requireSandbox(t testing.TB) *Config {
	t.Helper()
	h := &testHost
	h.once.Do(h.setup)
	if h.skip != "" {
		t.Skip(h.skip)
	}
	if h.err != nil {
		t.Fatal(h.err)
	}
	return h.cfg
}

func (h *sandboxHost) setup() {
	if euid := os.Geteuid(); euid != 0 {
		h.skip = fmt.Sprintf("needs root (euid is %d)", euid)
		return
	}
	cg := cgroup.Config{Parent: fmt.Sprintf("/execfarm-sbtest-%d", os.Getpid())}
	base := uint32(3<<30+1<<29) + uint32(os.Getpid()%64)*sandboxSlots*65536
	report := probe.Run(probe.Config{Cgroup: cg, UIDBase: base, UIDRangeSize: 65536, UIDSlots: sandboxSlots})
	var missing *probe.MissingError
	err := report.Missing(nil)
	if errors.As(err, &missing) && !slices.ContainsFunc(missing.Layers, func(l probe.Layer) bool { return l.Name == probe.UIDRange }) {
		h.skip = err.Error()
		return
	}
	if err != nil {
		h.err = err
		return
	}
	exe, err := os.Executable()
	if err != nil {
		h.err = err
		return
	}
	// Not t.TempDir: its parent is 0700, and workers (unprivileged host
	// uids) pass through the state directory to their sockets.
	if h.dir, err = os.MkdirTemp("", "execfarm-sbtest-"); err != nil {
		h.err = err
		return
	}
	if err := os.Chmod(h.dir, 0o711); err != nil {
		h.err = err
		return
	}
	h.cfg = &Config{
		WorkerBinary: exe,
		// Any ELF others may read: these tests run no goja.
		GojaBinary: "/usr/bin/true",
		StateDir:   h.dir,
		Cgroup:     cg,
		IDs:        NewIDPool(base, 65536, sandboxSlots),
	}
	if err := h.cfg.Validate(); err != nil {
		h.err = err
	}
}

// teardown removes what the tests left (cgroups, state directory) and
// reports it: a test that leaves something behind fails the run.
func (h *sandboxHost) teardown() error {
	if h.cfg == nil {
		return nil
	}
	var errs []error
	if n, err := cgroup.Cleanup(h.cfg.Cgroup); err != nil || n > 0 {
		errs = append(errs, fmt.Errorf("%d sandbox cgroup(s) left behind (%v)", n, err))
	}
	if err := cgroup.RemoveParent(h.cfg.Cgroup); err != nil {
		errs = append(errs, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(h.dir, "sb")); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		errs = append(errs, fmt.Errorf("sandbox directories left behind: %s", strings.Join(names, ", ")))
	}
	if n := h.cfg.IDs.InUse(); n > 0 {
		errs = append(errs, fmt.Errorf("%d uid range(s) still held", n))
	}
	errs = append(errs, os.RemoveAll(h.dir))
	return errors.Join(errs...)
}
