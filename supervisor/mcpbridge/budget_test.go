package mcpbridge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBudget(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name               string
		stdout, stderr     string
		budget             int
		wantOut, wantErr   string
		truncOut, truncErr bool
	}{
		{name: "short output unchanged", stdout: "hello\n", stderr: "warn\n", budget: 128, wantOut: "hello\n", wantErr: "warn\n"},
		{name: "exactly the budget", stdout: a(64), stderr: a(64), budget: 128, wantOut: a(64), wantErr: a(64)},
		{
			// 200 characters in 128: the marker for 106 omitted is 34,
			// leaving 94: 47 at each end.
			name: "stdout alone oversized takes the whole budget", stdout: "0123456789" + a(180) + "9876543210", budget: 128,
			wantOut: "0123456789" + a(37) + "\n[... 106 characters omitted ...]\n" + a(37) + "9876543210", truncOut: true,
		},
		{
			// stderr uses 10 of its 64: stdout gets 118.
			name: "unused share goes to the other stream", stdout: a(300), stderr: a(10), budget: 128,
			wantOut: a(42) + "\n[... 216 characters omitted ...]\n" + a(42), wantErr: a(10), truncOut: true,
		},
		{
			// Both oversized: 64 and 65 (stderr gets the odd one); each
			// marker is 34, so 30 kept of stdout, 31 of stderr (the end
			// gets the extra one).
			name: "both oversized split the budget, stderr the odd character", stdout: a(1000), stderr: a(1000), budget: 129,
			wantOut: a(15) + "\n[... 970 characters omitted ...]\n" + a(15), wantErr: a(15) + "\n[... 969 characters omitted ...]\n" + a(16),
			truncOut: true, truncErr: true,
		},
		{name: "budget below the minimum is the minimum", stdout: a(128), budget: 5, wantOut: a(128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, e := Budget(tt.stdout, tt.stderr, tt.budget)
			if o.Text != tt.wantOut || o.Truncated != tt.truncOut {
				t.Errorf("stdout = %q (truncated %v), want %q (%v)", o.Text, o.Truncated, tt.wantOut, tt.truncOut)
			}
			if e.Text != tt.wantErr || e.Truncated != tt.truncErr {
				t.Errorf("stderr = %q (truncated %v), want %q (%v)", e.Text, e.Truncated, tt.wantErr, tt.truncErr)
			}
			if o.TotalChars != utf8.RuneCountInString(tt.stdout) || e.TotalChars != utf8.RuneCountInString(tt.stderr) {
				t.Errorf("totals %d, %d", o.TotalChars, e.TotalChars)
			}
			if n := utf8.RuneCountInString(o.Text) + utf8.RuneCountInString(e.Text); n > max(tt.budget, MinOutputChars) {
				t.Errorf("%d characters returned, budget %d", n, tt.budget)
			}
		})
	}
}

// TestBudgetCountsCodePoints: multi-byte characters count once, are never
// split, and every budget from the minimum up is met exactly when the
// output overflows it.
func TestBudgetCountsCodePoints(t *testing.T) {
	s := strings.Repeat("é€😀", 400) // 1200 code points, 3600 bytes
	for budget := MinOutputChars; budget < 1300; budget += 37 {
		o, e := Budget(s, "", budget)
		if !utf8.ValidString(o.Text) {
			t.Fatalf("budget %d: invalid UTF-8", budget)
		}
		n := utf8.RuneCountInString(o.Text)
		if budget < 1200 && (n > budget || n < budget-1 || !o.Truncated) {
			t.Errorf("budget %d: %d code points (truncated %v), want the budget (one less when the marker's digits leave one over)", budget, n, o.Truncated)
		}
		if budget >= 1200 && (o.Text != s || o.Truncated) {
			t.Errorf("budget %d: output changed though it fits", budget)
		}
		if e.Text != "" || e.Truncated {
			t.Errorf("empty stderr became %q", e.Text)
		}
	}
}

// TestSplitWithoutRoomForAMarker: a remainder smaller than a marker keeps
// the beginning only, and says it cut.
func TestSplitWithoutRoomForAMarker(t *testing.T) {
	o, e := split(&stringText{s: strings.Repeat("a", 100)}, &stringText{}, 10)
	if o.Text != strings.Repeat("a", 10) || !o.Truncated || o.TotalChars != 100 || e.Text != "" {
		t.Errorf("split into 10: %+v, %+v", o, e)
	}
	if o, _ := split(&stringText{s: "abc"}, &stringText{}, 0); o.Text != "" || !o.Truncated {
		t.Errorf("split into 0: %+v", o)
	}
}
