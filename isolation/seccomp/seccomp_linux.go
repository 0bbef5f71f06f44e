package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/execfarm/execfarm/isolation/seccomp/install"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Load installs the sandbox's seccomp filter (see Program) on every thread of
// the calling process, with SECCOMP_FILTER_FLAG_TSYNC, so that no Go runtime
// thread escapes it; every process forked afterwards inherits it. It cannot
// be removed. Call it last, after mounts, pivot_root, rlimits and dropping
// capabilities: the filter denies mount, pivot_root and friends.
//
// Installing a filter without CAP_SYS_ADMIN requires no_new_privs on the
// calling thread (Documentation/userspace-api/seccomp_filter.rst). Load sets
// it when it is not already set, so that the filter also holds across
// set-uid executables; TSYNC then sets it on every other thread. Both steps
// run on one locked OS thread.
//
// Errors: ErrPolicy if the policy does not assemble, ErrNotSupported if the
// kernel lacks seccomp filters, ErrThreadSync if a thread could not be
// synchronised, otherwise the *os.SyscallError of prctl or seccomp.
func Load() error {
	prog, err := instructions()
	if err != nil {
		return err
	}
	return install.Filter(prog)
}

// Encoded returns the assembled filter as install.Encode lays it out, for
// a worker to install with install.Decode and install.Filter. It is
// assembled once per process. Errors: ErrPolicy.
func Encoded() ([]byte, error) { return encoded() }

var encoded = sync.OnceValues(func() ([]byte, error) {
	prog, err := instructions()
	if err != nil {
		return nil, err
	}
	return install.Encode(prog), nil
})

// instructions assembles Program into the kernel's struct sock_filter
// form, once per process.
var instructions = sync.OnceValues(func() ([]install.Instruction, error) {
	prog, err := Program()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("%w: assemble BPF: %w", ErrPolicy, err)
	}
	out := make([]install.Instruction, len(raw))
	for i, ins := range raw {
		out[i] = install.Instruction{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return out, nil
})

// requiredActions are the return actions Program uses, with the names the
// kernel lists in /proc/sys/kernel/seccomp/actions_avail.
var requiredActions = []struct {
	name   string
	action uint32
}{
	{"kill_process", unix.SECCOMP_RET_KILL_PROCESS},
	{"errno", unix.SECCOMP_RET_ERRNO},
	{"allow", unix.SECCOMP_RET_ALLOW},
}

// Supported reports whether this process can install the sandbox's filter:
// the kernel has seccomp filter mode (prctl PR_GET_SECCOMP answers, the
// process is not in strict mode) and offers every return action the filter
// uses (SECCOMP_GET_ACTION_AVAIL, the source of
// /proc/sys/kernel/seccomp/actions_avail; kill_process needs Linux 4.14).
// The string says why, for `execfarm doctor` and readiness reports.
func Supported() (bool, string) {
	if runtime.GOARCH != "amd64" {
		return false, "seccomp policy is written for x86_64 only, this is " + runtime.GOARCH
	}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return false, "kernel built without CONFIG_SECCOMP (prctl PR_GET_SECCOMP: EINVAL)"
		}
		return false, "prctl PR_GET_SECCOMP: " + err.Error()
	}
	modes := map[int]string{unix.SECCOMP_MODE_DISABLED: "none", unix.SECCOMP_MODE_STRICT: "strict", unix.SECCOMP_MODE_FILTER: "filter"}
	if mode == unix.SECCOMP_MODE_STRICT {
		return false, "process is in seccomp strict mode"
	}
	var names []string
	for _, a := range requiredActions {
		switch err := install.ActionAvailable(a.action); {
		case err == nil:
			names = append(names, a.name)
		case errors.Is(err, unix.EOPNOTSUPP):
			return false, "seccomp action " + a.name + " not available (kernel older than 4.14?)"
		default:
			return false, "seccomp(SECCOMP_GET_ACTION_AVAIL, " + a.name + "): " + err.Error()
		}
	}
	return true, fmt.Sprintf("seccomp filter mode available (current mode %s; actions %s)", modes[mode], strings.Join(names, " "))
}
