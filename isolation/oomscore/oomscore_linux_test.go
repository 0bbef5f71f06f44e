package oomscore

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func own(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestForker: a child forked between Raise and Restore starts at Max;
// the process is back at its own adjustment after Restore.
func TestForker(t *testing.T) {
	before := own(t)
	k, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer k.f.Close()
	if err := k.Raise(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cat", "/proc/self/oom_score_adj").Output()
	if rerr := k.Restore(); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "1000" {
		t.Errorf("child forked while raised: oom_score_adj %s, want 1000", got)
	}
	if got := own(t); got != before {
		t.Errorf("after Restore: %s, want %s", got, before)
	}
}

// TestFloor: a negative adjustment is raised to 0; others are kept.
// Setting a negative one needs CAP_SYS_RESOURCE, which not every test
// host grants root (a container's bounding set): there the rows that
// need none still run.
func TestFloor(t *testing.T) {
	before := own(t)
	defer os.WriteFile(path, []byte(before), 0)
	rows := []struct{ set, want string }{{"300", "300"}, {"0", "0"}}
	if err := os.WriteFile(path, []byte("-500"), 0); err == nil {
		rows = append(rows, struct{ set, want string }{"-500", "0"})
	} else {
		t.Logf("no negative row: %v (no CAP_SYS_RESOURCE)", err)
	}
	for _, tc := range rows {
		if err := os.WriteFile(path, []byte(tc.set), 0); err != nil {
			t.Fatal(err)
		}
		if err := Floor(); err != nil {
			t.Fatal(err)
		}
		if got := own(t); got != tc.want {
			t.Errorf("Floor at %s: %s, want %s", tc.set, got, tc.want)
		}
	}
}
