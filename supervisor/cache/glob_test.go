package cache

import (
	"errors"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"list-*", "list-pods in default", true},
		{"list-*", "list-", true},
		{"list-*", "a list-pods", false},
		{"*pods*", "list pods/services", true}, // '*' crosses '/'
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"a?c", "abc", true},
		{"a?c", "aéc", true}, // '?' is one rune, not one byte
		{"a?c", "ac", false},
		{"a?c", "a/c", true},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[^a-c]x", "dx", true},
		{"[!a-c]x", "bx", false},
		{`[\]]`, "]", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"*a*b*c*", "xaybzc", true},
		{"*a*b*c*", "xaybz", false},
		{"a*b", "aXXbXXb", true},
		{"a*b", "aXXbXXc", false},
		{"é*", "été", true},
		{"script-2024-01-15*", "script-2024-01-15t10-30-00-abc123def456.ts", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"|"+tt.s, func(t *testing.T) {
			if err := checkGlob(tt.pattern); err != nil {
				t.Fatalf("checkGlob(%q): %v", tt.pattern, err)
			}
			if got := globMatch(tt.pattern, tt.s); got != tt.want {
				t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

func TestCheckGlobRejects(t *testing.T) {
	for _, p := range []string{"[", "[]", "[a", "[a-", "[a-]", `\`, `a\`, "[-a]", `[\`, "x[z-"} {
		t.Run(p, func(t *testing.T) {
			if err := checkGlob(p); !errors.Is(err, ErrInvalidFilter) {
				t.Errorf("checkGlob(%q) = %v, want ErrInvalidFilter", p, err)
			}
		})
	}
}
