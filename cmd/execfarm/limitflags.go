package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// limitFlags are the resource-limit flags of the commands that start
// something (sandbox create, run, test), one per ResourceLimits field, in
// one place: amounts with units as Kubernetes writes them (256Mi, 1G, 0.5
// CPU), times as Go durations (30s, 500ms). A flag not given leaves its
// field 0, which the server reads as its default.
type limitFlags struct {
	memory, output, workspace quantityFlag // bytes
	cpus                      quantityFlag // cores
	pids, fds                 countFlag
	timeout, cpuTime          time.Duration
}

// register adds the flags to fs. what says what the limits bound ("the
// sandbox", "the execution"), for the help texts.
func (l *limitFlags) register(fs *pflag.FlagSet, what string) {
	fs.Var(&l.memory, "memory", "memory limit of "+what+", bytes with units: 256Mi, 1Gi (default: the server's, 512Mi)")
	fs.Var(&l.cpus, "cpus", "CPU bandwidth of "+what+" in cores: 0.5, 2 (default: the server's, 1)")
	ceil := limits.DefaultCeilings()
	l.pids.want = fmt.Sprintf("a whole number from %d to the server's ceiling (%d unless configured)", limits.MinProcesses, ceil.Processes)
	l.fds.want = fmt.Sprintf("a whole number from %d to the server's ceiling (%d unless configured)", limits.MinFileDescriptors, ceil.FileDescriptors)
	fs.Var(&l.pids, "pids", "processes and threads of "+what+fmt.Sprintf(" (at least %d; default: the server's, 256)", limits.MinProcesses))
	fs.Var(&l.fds, "open-files", fmt.Sprintf("open file descriptors per process (RLIMIT_NOFILE; at least %d; default: the server's, 1024)", limits.MinFileDescriptors))
	fs.Var(&l.fds, "fds", "the same as --open-files")
	fs.Var(&l.output, "output-limit", "output kept per stream, bytes with units (default: the server's, 1Mi)")
	fs.DurationVar(&l.timeout, "timeout", 0, "wall-clock timeout of each execution, whole milliseconds, at least 1ms: 30s, 2m; 0 = the server's default, 30s")
	fs.DurationVar(&l.cpuTime, "cpu-time", 0, fmt.Sprintf("CPU time of each execution, all its processes together, whole milliseconds, at least %dms: 10s; 0 = the server's default, none", limits.MinCPUTimeMs))
	fs.Var(&l.workspace, "workspace", "size of the /workspace file system, bytes with units (default: the server's, 64Mi)")
}

// proto returns the limits the flags ask for, nil when none was given.
// Errors name the flag: a negative amount, or one too large to carry.
func (l *limitFlags) proto() (*sandboxv1.ResourceLimits, error) {
	out := &sandboxv1.ResourceLimits{MaxProcesses: l.pids.n, MaxFileDescriptors: l.fds.n}
	ceil := limits.DefaultCeilings()
	var err error
	if out.MaxMemoryBytes, err = l.memory.limitBytes("--memory", ceil.MemoryBytes); err != nil {
		return nil, err
	}
	if out.MaxOutputBytes, err = l.output.limitBytes("--output-limit", ceil.OutputBytes); err != nil {
		return nil, err
	}
	if out.WorkspaceBytes, err = l.workspace.limitBytes("--workspace", ceil.WorkspaceBytes); err != nil {
		return nil, err
	}
	if l.cpus.set {
		// 1 core = 1000m = 100 percent. A quantity past int64 milli
		// (1e30) is refused with the rest: MilliValue would wrap it.
		pct := l.cpus.q.MilliValue() / 10
		if l.cpus.q.Sign() <= 0 || l.cpus.q.Cmp(*resource.NewQuantity(math.MaxInt32/100, resource.DecimalSI)) > 0 ||
			pct < limits.MinCPUPercent || pct > math.MaxInt32 {
			return nil, fmt.Errorf("--cpus %s: want a number of cores from %g to the server's ceiling (%g unless configured)",
				l.cpus.raw, float64(limits.MinCPUPercent)/100, float64(ceil.CPUPercent)/100)
		}
		out.MaxCpuPercent = int32(pct)
	}
	if out.TimeoutMs, err = millis("--timeout", l.timeout, 1); err != nil {
		return nil, err
	}
	if out.CpuTimeMs, err = millis("--cpu-time", l.cpuTime, limits.MinCPUTimeMs); err != nil {
		return nil, err
	}
	if proto.Equal(out, &sandboxv1.ResourceLimits{}) {
		return nil, nil
	}
	return out, nil
}

// quantityFlag is a flag holding an amount with units (resource.Quantity:
// 256Mi, 1G, 1.5, 500m).
type quantityFlag struct {
	q   resource.Quantity
	raw string // as given, for refusals
	set bool
}

func (f *quantityFlag) String() string {
	if !f.set {
		return ""
	}
	return f.q.String()
}

func (f *quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q: want an amount with units, as 256Mi, 1G or 0.5", s)
	}
	f.q, f.raw, f.set = q, s, true
	return nil
}

func (f *quantityFlag) Type() string { return "quantity" }

// millis is a duration flag's value in whole milliseconds, as the API
// takes timeout_ms and cpu_time_ms: 0 = the default (the flag left out),
// else at least minMs. A negative duration, one under minMs or one with a
// fraction of a millisecond is refused naming the rule.
func millis(flag string, d time.Duration, minMs int64) (int64, error) {
	least := time.Duration(minMs) * time.Millisecond
	switch {
	case d == 0:
		return 0, nil
	case d < 0:
		return 0, fmt.Errorf("%s %v: must not be negative (at least %v, or 0 for the default)", flag, d, least)
	case d < least:
		return 0, fmt.Errorf("%s %v: below the minimum %v (0 is the default)", flag, d, least)
	case d%time.Millisecond != 0:
		return 0, fmt.Errorf("%s %v: want whole milliseconds", flag, d)
	}
	return d.Milliseconds(), nil
}

// limitBytes is bytes for a limit: its refusal names the accepted range,
// up to the server's default ceiling.
func (f *quantityFlag) limitBytes(flag string, ceiling int64) (int64, error) {
	n, err := f.bytes(flag)
	if err != nil {
		return 0, fmt.Errorf("%s %s: want an amount of bytes from 1 to the server's ceiling (%s unless configured)",
			flag, f.raw, resource.NewQuantity(ceiling, resource.BinarySI))
	}
	return n, nil
}

// countFlag is a flag holding a count of a limit (processes, file
// descriptors): a whole number, 0 (the default) for the server's default.
// A refusal says want, the accepted values.
type countFlag struct {
	n    int32
	want string
}

func (f *countFlag) String() string { return strconv.Itoa(int(f.n)) }

func (f *countFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("want %s", f.want)
	}
	f.n = int32(n)
	return nil
}

func (f *countFlag) Type() string { return "int" }

// bytes returns the amount in bytes (rounded up), 0 when unset.
func (f *quantityFlag) bytes(flag string) (int64, error) {
	if !f.set {
		return 0, nil
	}
	n, ok := f.q.AsInt64()
	if !ok {
		// A fraction of a byte rounds up; beyond int64 is refused.
		if f.q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) > 0 {
			return 0, fmt.Errorf("%s %s: too large", flag, f.q.String())
		}
		n = f.q.Value()
	}
	if n <= 0 {
		return 0, fmt.Errorf("%s %s: want a positive amount of bytes", flag, f.q.String())
	}
	return n, nil
}
