package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/probe"
)

// fakeHost is a host where every layer is available except missing.
func fakeHost(missing ...string) probe.Report {
	var r probe.Report
	for _, name := range []string{probe.UserNamespace, probe.PIDNamespace, probe.Cgroup, "cgroup-memory", probe.Seccomp, probe.Landlock, probe.Overlay, probe.UIDRange} {
		l := probe.Layer{Name: name, Available: true, Required: name != probe.Overlay, Detail: "fake"}
		for _, m := range missing {
			if m == name {
				l.Available, l.Detail = false, "fake: gone"
			}
		}
		r.Layers = append(r.Layers, l)
	}
	return r
}

func TestLayers(t *testing.T) {
	tests := []struct {
		name     string
		report   probe.Report
		allow    []string
		wantErr  error
		inErr    []string
		inactive map[string]string // layer → detail prefix
	}{
		{name: "all there", report: fakeHost(), inactive: map[string]string{probe.Overlay: "fake"}},
		{
			name: "seccomp missing refuses, naming it", report: fakeHost(probe.Seccomp),
			wantErr: ErrCannotIsolate, inErr: []string{"seccomp (fake: gone", "--allow-degraded=seccomp"},
			inactive: map[string]string{probe.Seccomp: "missing: fake: gone", probe.Overlay: "fake"},
		},
		{
			name: "seccomp missing and allowed starts, reporting it inactive", report: fakeHost(probe.Seccomp), allow: []string{"seccomp"},
			inactive: map[string]string{probe.Seccomp: "disabled by --allow-degraded; fake: gone", probe.Overlay: "fake"},
		},
		{
			name: "seccomp present and allowed is reported off", report: fakeHost(), allow: []string{"seccomp"},
			inactive: map[string]string{probe.Seccomp: "disabled by --allow-degraded; fake", probe.Overlay: "fake"},
		},
		{
			name: "cgroup missing refuses", report: fakeHost(probe.Cgroup, "cgroup-memory"),
			wantErr: ErrCannotIsolate, inErr: []string{"cgroup (fake: gone", "cgroup-memory (fake: gone", "cannot be degraded"},
		},
		{
			name: "cgroup cannot be allowed", report: fakeHost(probe.Cgroup), allow: []string{"cgroup"},
			wantErr: probe.ErrNotDegradable, inErr: []string{"--allow-degraded=cgroup"},
		},
		{
			name: "a typo allows nothing", report: fakeHost(probe.Seccomp), allow: []string{"seccom"},
			wantErr: probe.ErrUnknownLayer, inErr: []string{`"seccom"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layers, err := resolveLayers(tt.report, tt.allow)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("resolveLayers: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("resolveLayers error = %v, want %v", err, tt.wantErr)
			}
			for _, s := range tt.inErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			if len(layers) != len(tt.report.Layers) {
				t.Fatalf("%d layers, want %d", len(layers), len(tt.report.Layers))
			}
			if tt.inactive == nil {
				return
			}
			for _, l := range layers {
				prefix, off := tt.inactive[l.GetName()]
				if l.GetActive() == off {
					t.Errorf("%s: active = %v", l.GetName(), l.GetActive())
				}
				if off && !strings.HasPrefix(l.GetDetail(), prefix) {
					t.Errorf("%s: detail %q, want prefix %q", l.GetName(), l.GetDetail(), prefix)
				}
			}
		})
	}
}
