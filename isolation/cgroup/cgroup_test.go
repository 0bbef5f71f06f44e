package cgroup

import (
	"errors"
	"testing"
)

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{{Unavailable, "unavailable"}, {V1, "cgroup v1"}, {V2, "cgroup v2"}, {Mode(9), "cgroup mode 9"}} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(tc.m), got, tc.want)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"zero", Limits{}, true},
		{"all set", Limits{MemoryMaxBytes: 1 << 20, PidsMax: 10, CPUQuotaMicros: 50000, CPUPeriodMicros: 100000}, true},
		{"negative memory", Limits{MemoryMaxBytes: -1}, false},
		{"negative pids", Limits{PidsMax: -1}, false},
		{"negative quota", Limits{CPUQuotaMicros: -1}, false},
		{"quota below 1ms", Limits{CPUQuotaMicros: 999}, false},
		{"period below 1ms", Limits{CPUPeriodMicros: 999}, false},
		{"period above 1s", Limits{CPUPeriodMicros: 1000001}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.validate()
			if tc.ok && err != nil {
				t.Fatalf("validate() = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidLimits) {
				t.Fatalf("validate() = %v, want ErrInvalidLimits", err)
			}
		})
	}
	if got := (Limits{}).period(); got != DefaultCPUPeriodMicros {
		t.Errorf("default period = %d, want %d", got, DefaultCPUPeriodMicros)
	}
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"sbx-1", true}, {"0b9f6c1e-uuid", true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"/a", false},
		{"a\x00b", false}, {"a\nb", false}, {string(make([]byte, 256)), false},
	} {
		err := validName(tc.name)
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrInvalidName)) {
			t.Errorf("validName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		in         Config
		root, prnt string
	}{
		{Config{}, DefaultRoot, DefaultParent},
		{Config{Parent: "x/y"}, DefaultRoot, "/x/y"},
		{Config{Parent: "/../../etc"}, DefaultRoot, "/etc"},
		{Config{Root: "/tmp/r", Parent: "/a/"}, "/tmp/r", "/a"},
	} {
		got := tc.in.withDefaults()
		if got.Root != tc.root || got.Parent != tc.prnt {
			t.Errorf("withDefaults(%+v) = root %q parent %q, want %q %q", tc.in, got.Root, got.Parent, tc.root, tc.prnt)
		}
	}
}

func TestProbeResultMissing(t *testing.T) {
	r := ProbeResult{Mode: V2, Controllers: []ControllerStatus{
		{Name: "memory", Available: true, Writable: true},
		{Name: "cpu", Available: true},
		{Name: "pids"},
	}}
	if got := r.Missing(); len(got) != 2 || got[0] != "cpu" || got[1] != "pids" {
		t.Errorf("Missing() = %v, want [cpu pids]", got)
	}
	if r.OK() {
		t.Error("OK() = true with missing controllers")
	}
	r.Controllers = r.Controllers[:1]
	if !r.OK() {
		t.Error("OK() = false with every controller present")
	}
}
