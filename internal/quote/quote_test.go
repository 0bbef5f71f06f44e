package quote

import (
	"strings"
	"testing"
)

// TestQ: a short field is quoted whole; a long one is cut to MaxBytes at
// a character's start and says its length.
func TestQ(t *testing.T) {
	if got := Q("exec-1"); got != `"exec-1"` {
		t.Errorf("Q(short) = %s", got)
	}
	long := strings.Repeat("é", 4<<20)
	got := Q(long)
	if len(got) > MaxBytes+32 || !strings.HasSuffix(got, "... (8388608 bytes)") || !strings.HasPrefix(got, `"éé`) || strings.Contains(got, `\x`) {
		t.Errorf("Q(8 MiB) = %.200s (%d bytes)", got, len(got))
	}
}
