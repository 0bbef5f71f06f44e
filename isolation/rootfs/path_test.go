package rootfs

import (
	"errors"
	"strings"
	"testing"
)

func TestSandboxPath(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: "/workspace"},
		{in: ".", want: "/workspace"},
		{in: "a.txt", want: "/workspace/a.txt"},
		{in: "dir//b/./c/", want: "/workspace/dir/b/c"},
		{in: "/", want: "/"},
		{in: "/etc/passwd", want: "/etc/passwd"},
		{in: "..", want: "/"},
		{in: "../tmp/x", want: "/tmp/x"},
		{in: "a/../../", want: "/"},
		{in: "a/../../..", bad: true},
		{in: "/workspace/../etc", want: "/etc"},
		{in: "root/etc/shadow", want: "/workspace/root/etc/shadow"},
		{in: "../../..", bad: true},
		{in: "/..", bad: true},
		{in: "/../etc/passwd", bad: true},
		{in: "a/../../../x", bad: true},
		{in: "a\x00b", bad: true},
		{in: strings.Repeat("a", PathMax+1), bad: true},
		// Within PathMax alone, beyond it once the workspace is prefixed.
		{in: strings.Repeat("a", PathMax-5), bad: true},
	}
	for _, tt := range tests {
		got, err := SandboxPath(tt.in)
		if tt.bad {
			if !errors.Is(err, ErrInvalidPath) {
				t.Errorf("SandboxPath(%.40q) = %q, %v; want ErrInvalidPath", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("SandboxPath(%.40q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzSandboxPath checks the rule: every accepted path is absolute, clean
// (no "", "." or ".." component, no trailing slash but the root's), at
// most PathMax bytes, free of NUL; and a refusal is always ErrInvalidPath.
func FuzzSandboxPath(f *testing.F) {
	for _, s := range []string{"", "a", "/", "..", "../..", "/a/../..", "a/./b//c/", "\x00", "/workspace/../../x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := SandboxPath(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("SandboxPath(%q): %v, not ErrInvalidPath", p, err)
			}
			return
		}
		if !strings.HasPrefix(got, "/") || len(got) > PathMax || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("SandboxPath(%q) = %q", p, got)
		}
		if got == "/" {
			return
		}
		for _, c := range strings.Split(got[1:], "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("SandboxPath(%q) = %q: component %q", p, got, c)
			}
		}
		again, err := SandboxPath(got)
		if err != nil || again != got {
			t.Fatalf("SandboxPath(%q) = %q, but SandboxPath of that = %q, %v", p, got, again, err)
		}
	})
}
