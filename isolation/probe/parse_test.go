package probe

import (
	"slices"
	"testing"
)

func TestParseStatusIDs(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []uint64
	}{
		{name: "proc status", in: "Name:\tcat\nUmask:\t0022\nUid:\t0\t1000\t2\t3\nGid:\t4\t5\t6\t7\nGroups:\t100 200\n", want: []uint64{0, 1000, 2, 3, 4, 5, 6, 7}},
		{name: "no id lines", in: "Name:\tx\nPid:\t1\n", want: nil},
		{name: "malformed and too large skipped", in: "Uid:\tx\t4294967296\t12\n", want: []uint64{12}},
		{name: "empty", in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseStatusIDs([]byte(tt.in)); !slices.Equal(got, tt.want) {
				t.Errorf("parseStatusIDs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseColonIDs(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\n# comment\n\nbroken\nsb:x:1073741824:1073741825::/:/bin/false\nbad:x:-1:z:\n"
	got := parseColonIDs([]byte(passwd), 2, 3)
	if !slices.Equal(got["root"], []uint64{0, 0}) || !slices.Equal(got["sb"], []uint64{1073741824, 1073741825}) {
		t.Errorf("parseColonIDs = %v", got)
	}
	if _, ok := got["bad"]; ok {
		t.Errorf("malformed ids parsed: %v", got["bad"])
	}
	if _, ok := got["broken"]; ok {
		t.Errorf("short line parsed: %v", got["broken"])
	}
}

func TestParseSubIDs(t *testing.T) {
	got := parseSubIDs([]byte("alice:100000:65536\n#x:1:2\nbob:1073741824:10\nzero:5:0\nbad:a:1\nshort:1\n"))
	want := map[string][]idRange{"alice": {{100000, 165535}}, "bob": {{1073741824, 1073741833}}}
	if len(got) != len(want) {
		t.Fatalf("parseSubIDs = %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("parseSubIDs[%s] = %v, want %v", k, got[k], v)
		}
	}
}

func TestParseFilesystems(t *testing.T) {
	got := parseFilesystems([]byte("nodev\tsysfs\n\text4\nnodev\toverlay\n\n"))
	if !slices.Equal(got, []string{"sysfs", "ext4", "overlay"}) {
		t.Errorf("parseFilesystems = %q", got)
	}
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{"Uid:\t0\t0\t0\t0\n", "a:1:2\n", "nodev\toverlay\n", "::::\n", "x:4294967295:4294967295"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range parseStatusIDs([]byte(s)) {
			if id > 1<<32-1 {
				t.Fatalf("id %d above 32 bits", id)
			}
		}
		for _, rs := range parseSubIDs([]byte(s)) {
			for _, r := range rs {
				if r.last < r.first {
					t.Fatalf("range %v ends before it starts", r)
				}
			}
		}
		_ = parseColonIDs([]byte(s), 2, 3)
		_ = parseFilesystems([]byte(s))
	})
}
