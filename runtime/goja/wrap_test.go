package goja

import (
	"strings"
	"testing"
)

func TestVLQ(t *testing.T) {
	tests := []struct {
		v   int
		enc string
	}{{0, "A"}, {1, "C"}, {-1, "D"}, {15, "e"}, {16, "gB"}, {14, "c"}, {1000, "w+B"}, {-1000, "x+B"}}
	for _, tt := range tests {
		t.Run(tt.enc, func(t *testing.T) {
			if got := encodeVLQ(tt.v); got != tt.enc {
				t.Errorf("encodeVLQ(%d) = %q, want %q", tt.v, got, tt.enc)
			}
			v, n, ok := decodeVLQ(tt.enc + "AAAA")
			if !ok || v != tt.v || n != len(tt.enc) {
				t.Errorf("decodeVLQ(%q) = %d, %d, %v", tt.enc, v, n, ok)
			}
		})
	}
	if _, _, ok := decodeVLQ("g"); ok {
		t.Error("decodeVLQ accepted a truncated value")
	}
}

func TestShiftFirstLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"AAAA,MAAM;AACA", "cAAA,MAAM;AACA"},
		{";AACA", ";AACA"},
		{"", ""},
		{"!!", "!!"},
	}
	for _, tt := range tests {
		if got := shiftFirstLine(tt.in, 14); got != tt.want {
			t.Errorf("shiftFirstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	sm := "//# sourceMappingURL=data:application/json;base64,eyJtYXBwaW5ncyI6IkFBQUEifQ==" // {"mappings":"AAAA"}
	got := wrap("a()\n" + sm + "\n")
	if !strings.HasPrefix(got, wrapPrefix+"a()\n") {
		t.Errorf("wrapper not on the first line: %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, sourceMapPrefix) || lines[len(lines)-2] != strings.TrimPrefix(wrapSuffix, "\n") {
		t.Errorf("source map not moved after the wrapper: %q", got)
	}
	if last == sm {
		t.Errorf("source map not shifted")
	}
	if got := wrap("#!/usr/bin/env node\nx"); !strings.HasPrefix(got, wrapPrefix+"//#!") {
		t.Errorf("hashbang kept as code: %q", got)
	}
	if got := wrap("//# sourceMappingURL=/etc/passwd"); !strings.HasSuffix(got, "//# sourceMappingURL=/etc/passwd\n") {
		t.Errorf("file source map URL changed: %q", got)
	}
}
