package limits

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

func i32(v int32) *int32 { return &v }

func TestResolveLimits(t *testing.T) {
	tests := []struct {
		name      string
		req       *sandboxv1.ResourceLimits
		timeout   *int32
		want      func(Set) Set
		wantField string
	}{
		{name: "nil is defaults", want: func(l Set) Set { return l }},
		{name: "zero fields are defaults", req: &sandboxv1.ResourceLimits{}, want: func(l Set) Set { return l }},
		{name: "prodisco timeout", timeout: i32(1500), want: func(l Set) Set { l.TimeoutMs = 1500; return l }},
		{name: "limits timeout wins", req: &sandboxv1.ResourceLimits{TimeoutMs: 700}, timeout: i32(1500), want: func(l Set) Set { l.TimeoutMs = 700; return l }},
		{name: "memory", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 256 << 20}, want: func(l Set) Set { l.MemoryBytes = 256 << 20; return l }},
		{name: "memory lowers the default workspace", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 64 << 20},
			want: func(l Set) Set { l.MemoryBytes, l.WorkspaceBytes = 64<<20, MaxWorkspaceBytes(64<<20); return l }},
		{name: "workspace over memory", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 128 << 20, WorkspaceBytes: 128 << 20}, wantField: "limits.workspace_bytes"},
		{name: "all set", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 1 << 30, MaxCpuPercent: 200, MaxFileDescriptors: 64, MaxProcesses: 32, MaxOutputBytes: 4096, CpuTimeMs: 900, WorkspaceBytes: 8 << 20},
			want: func(l Set) Set {
				l.MemoryBytes, l.CPUPercent, l.FileDescriptors, l.Processes, l.OutputBytes, l.CPUTimeMs, l.WorkspaceBytes = 1<<30, 200, 64, 32, 4096, 900, 8<<20
				return l
			}},
		{name: "negative memory", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: -1}, wantField: "limits.max_memory_bytes"},
		{name: "memory above ceiling", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 1 << 40}, wantField: "limits.max_memory_bytes"},
		{name: "memory below minimum", req: &sandboxv1.ResourceLimits{MaxMemoryBytes: 1 << 20}, wantField: "limits.max_memory_bytes"},
		// The worker's own descriptors count: goja and node failed to
		// start at 24 ("too many open files") while 16 passed.
		{name: "file descriptors below what a start needs", req: &sandboxv1.ResourceLimits{MaxFileDescriptors: 24}, wantField: "limits.max_file_descriptors"},
		{name: "file descriptors one below the minimum", req: &sandboxv1.ResourceLimits{MaxFileDescriptors: MinFileDescriptors - 1}, wantField: "limits.max_file_descriptors"},
		{name: "file descriptors at the minimum", req: &sandboxv1.ResourceLimits{MaxFileDescriptors: MinFileDescriptors},
			want: func(l Set) Set { l.FileDescriptors = MinFileDescriptors; return l }},
		{name: "cpu above ceiling", req: &sandboxv1.ResourceLimits{MaxCpuPercent: 100000}, wantField: "limits.max_cpu_percent"},
		{name: "negative processes", req: &sandboxv1.ResourceLimits{MaxProcesses: -5}, wantField: "limits.max_processes"},
		{name: "negative output", req: &sandboxv1.ResourceLimits{MaxOutputBytes: -5}, wantField: "limits.max_output_bytes"},
		{name: "zero prodisco timeout", timeout: i32(0), wantField: "timeout_ms"},
		{name: "negative prodisco timeout", timeout: i32(-3), wantField: "timeout_ms"},
		{name: "timeout above ceiling", req: &sandboxv1.ResourceLimits{TimeoutMs: 1 << 40}, wantField: "limits.timeout_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.req, tt.timeout, Default(), DefaultCeilings())
			if tt.wantField != "" {
				var le *FieldError
				if !errors.As(err, &le) || le.Field != tt.wantField || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want FieldError on %s", err, tt.wantField)
				}
				if !strings.Contains(err.Error(), tt.wantField) {
					t.Fatalf("message %q does not name %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(Default()); got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func FuzzResolveLimits(f *testing.F) {
	f.Add(int64(0), int32(0), int32(0), int32(0), int64(0), int64(0), int64(0), int64(0), int32(1000))
	f.Add(int64(-1), int32(-1), int32(-1), int32(-1), int64(-1), int64(-1), int64(-1), int64(-1), int32(-1))
	f.Add(int64(1<<62), int32(1<<30), int32(1<<30), int32(1<<30), int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), int32(1<<30))
	f.Fuzz(func(t *testing.T, mem int64, cpu, fds, procs int32, out, timeout, cpuTime, ws int64, top int32) {
		req := &sandboxv1.ResourceLimits{MaxMemoryBytes: mem, MaxCpuPercent: cpu, MaxFileDescriptors: fds, MaxProcesses: procs,
			MaxOutputBytes: out, TimeoutMs: timeout, CpuTimeMs: cpuTime, WorkspaceBytes: ws}
		got, err := Resolve(req, &top, Default(), DefaultCeilings())
		if err != nil {
			var le *FieldError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		c := DefaultCeilings()
		if got.MemoryBytes <= 0 || got.MemoryBytes > c.MemoryBytes || got.CPUPercent <= 0 || got.CPUPercent > c.CPUPercent ||
			got.FileDescriptors <= 0 || got.FileDescriptors > c.FileDescriptors || got.Processes <= 0 || got.Processes > c.Processes ||
			got.OutputBytes <= 0 || got.OutputBytes > c.OutputBytes || got.TimeoutMs <= 0 || got.TimeoutMs > c.TimeoutMs ||
			got.CPUTimeMs < 0 || got.CPUTimeMs > c.CPUTimeMs || got.WorkspaceBytes <= 0 || got.WorkspaceBytes > c.WorkspaceBytes {
			t.Fatalf("accepted limits out of range: %+v", got)
		}
		if filesCharge(got) > FilesBudgetBytes(got.MemoryBytes) {
			t.Fatalf("accepted limits whose tmpfs mounts may charge %d of memory %d: %+v", filesCharge(got), got.MemoryBytes, got)
		}
	})
}

// TestSecondsSaturate: seconds past what a duration or int64 milliseconds
// hold saturate instead of wrapping to negative values (an MCP timeout of
// 9223372036854775 s was refused as "-9223372036854775616 ms").
func TestSecondsSaturate(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		d      time.Duration
		millis int64
	}{
		{30, 30 * time.Second, 30000},
		{-2, -2 * time.Second, -2000},
		{9223372036854775, math.MaxInt64, 9223372036854775000},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64 / 1000 * 1000},
		{math.MinInt64, math.MinInt64, math.MinInt64 / 1000 * 1000},
	} {
		if d := Seconds(tc.n); d != tc.d {
			t.Errorf("Seconds(%d) = %v; want %v", tc.n, d, tc.d)
		}
		if ms := SecondsToMillis(tc.n); ms != tc.millis {
			t.Errorf("SecondsToMillis(%d) = %d; want %d", tc.n, ms, tc.millis)
		}
	}
}
