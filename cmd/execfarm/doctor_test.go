package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/isolation/probe"
)

func TestPrintDoctor(t *testing.T) {
	host := func(missing string) probe.Report {
		r := probe.Report{Warnings: []string{"no swap accounting"}}
		for _, name := range []string{probe.UserNamespace, probe.Cgroup, probe.Seccomp, probe.Overlay} {
			r.Layers = append(r.Layers, probe.Layer{Name: name, Available: name != missing, Required: name != probe.Overlay, Detail: "d-" + name})
		}
		return r
	}
	tests := []struct {
		name   string
		report probe.Report
		allow  []string
		ok     bool
		want   []string
	}{
		{name: "can isolate", report: host(""), ok: true, want: []string{
			"LAYER", "user-namespace ok", "overlay info", "warning: no swap accounting", "execfarm can isolate on this host\n"}},
		{name: "seccomp missing", report: host(probe.Seccomp), want: []string{
			"seccomp missing", "execfarm cannot start: missing seccomp (use --allow-degraded=seccomp to run without it)"}},
		{name: "seccomp allowed", report: host(probe.Seccomp), allow: []string{"seccomp"}, ok: true, want: []string{
			"seccomp degraded-allowed", "execfarm can isolate on this host, degraded: without seccomp"}},
		{name: "cgroup missing", report: host(probe.Cgroup), allow: []string{"cgroup"}, want: []string{
			"execfarm cannot start: probe: isolation layer cannot be degraded: --allow-degraded=cgroup"}},
		{name: "user namespace missing", report: host(probe.UserNamespace), want: []string{
			"execfarm cannot start: missing user-namespace (cannot be degraded:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if ok := printDoctor(&b, tt.report, tt.allow); ok != tt.ok {
				t.Errorf("printDoctor = %v, want %v", ok, tt.ok)
			}
			// Compare with the table's column padding collapsed.
			out := regexp.MustCompile(` {2,}`).ReplaceAllString(b.String(), " ")
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, b.String())
				}
			}
		})
	}
}
