package supervisor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/supervisor/session"
)

// TestListResponseBoundsItsBytes lists the red team's directory: 10000
// entries of 245-character names below 15 levels of 250-character
// directories. The response keeps the first entries that fit in the byte
// bound, in order, says it is truncated with the directory's total, and
// its encoding fits the bound; a listing within the bound is whole.
func TestListResponseBoundsItsBytes(t *testing.T) {
	dir := "/workspace" + strings.Repeat("/"+strings.Repeat("d", 250), 15)
	entries := make([]session.FileInfo, 10000)
	for i := range entries {
		name := fmt.Sprintf("%05d", i) + strings.Repeat("f", 240)
		entries[i] = session.FileInfo{Name: name, Path: dir + "/" + name, Size: 1, Type: session.TypeFile, Mode: 0o644, ModTime: time.Unix(1700000000, 0)}
	}
	for _, tc := range []struct {
		name      string
		entries   []session.FileInfo
		total     int64
		wantWhole bool
	}{
		{"over the bound", entries, 10000, false},
		{"over the bound, more on disk", entries, 50000, false},
		{"within the bound", entries[:100], 100, true},
		{"within the bound, max_entries cut", entries[:100], 5000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := listResponse(dir, tc.entries, tc.total, maxListBytes)
			if size := proto.Size(resp); size > maxListBytes {
				t.Errorf("response of %d bytes, over the %d bound", size, maxListBytes)
			}
			got := resp.GetEntries()
			if tc.wantWhole && len(got) != len(tc.entries) {
				t.Errorf("%d entries of %d", len(got), len(tc.entries))
			}
			if !tc.wantWhole && len(tc.entries) > 100 && (len(got) == 0 || len(got) == len(tc.entries)) {
				t.Errorf("%d entries of %d, want the bound to cut them", len(got), len(tc.entries))
			}
			for i, e := range got {
				if e.GetName() != tc.entries[i].Name {
					t.Fatalf("entry %d is %.10s, want %.10s", i, e.GetName(), tc.entries[i].Name)
				}
			}
			if resp.GetTruncated() == tc.wantWhole || resp.GetTotalEntries() != tc.total || resp.GetPath() != dir {
				t.Errorf("truncated %v, total_entries %d, path %.20s; want truncated %v, %d", resp.GetTruncated(), resp.GetTotalEntries(), resp.GetPath(), !tc.wantWhole, tc.total)
			}
		})
	}
	// The bound is exact: it keeps room for truncated (2 bytes), so the
	// whole listing fits in its size plus those and one byte less cuts
	// its last entry.
	whole := proto.Size(listResponse(dir, entries[:3], 3, maxListBytes)) + 2
	if cut := listResponse(dir, entries[:3], 3, whole-1); len(cut.GetEntries()) != 2 || !cut.GetTruncated() {
		t.Errorf("one byte under: %d entries, truncated %v; want 2, true", len(cut.GetEntries()), cut.GetTruncated())
	}
	if same := listResponse(dir, entries[:3], 3, whole); len(same.GetEntries()) != 3 || same.GetTruncated() {
		t.Errorf("at its size: %d entries, truncated %v; want 3, false", len(same.GetEntries()), same.GetTruncated())
	}
}
