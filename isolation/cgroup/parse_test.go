package cgroup

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseFlatKeyed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]int64
		ok   bool
	}{
		{"cpu.stat v2", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n", map[string]int64{"usage_usec": 1500, "user_usec": 1000, "system_usec": 500, "nr_periods": 0}, true},
		{"memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 1\n", map[string]int64{"low": 0, "high": 0, "max": 12, "oom": 2, "oom_kill": 1, "oom_group_kill": 1}, true},
		{"oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", map[string]int64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3}, true},
		{"no trailing newline, blank lines", "\na 1\n\nb 2", map[string]int64{"a": 1, "b": 2}, true},
		{"saturates", "a 18446744073709551615", map[string]int64{"a": math.MaxInt64}, true},
		{"empty", "", map[string]int64{}, true},
		{"three fields", "a 1 2\n", nil, false},
		{"one field", "a\n", nil, false},
		{"negative", "a -1\n", nil, false},
		{"not a number", "a max\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlatKeyed([]byte(tc.in))
			if !tc.ok {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("parseFlatKeyed(%q) err = %v, want ErrMalformed", tc.in, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseFlatKeyed(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseSingle(t *testing.T) {
	for _, tc := range []struct {
		in    string
		v     int64
		isMax bool
		ok    bool
	}{
		{"123\n", 123, false, true}, {"max\n", -1, true, true}, {"0", 0, false, true},
		{"9223372036854771712\n", 9223372036854771712, false, true},
		{"", 0, false, false}, {"12 13", 0, false, false}, {"-5", 0, false, false}, {"MAX", 0, false, false},
	} {
		v, isMax, err := parseSingle([]byte(tc.in))
		if tc.ok != (err == nil) || (err == nil && (v != tc.v || isMax != tc.isMax)) {
			t.Errorf("parseSingle(%q) = %d, %v, %v; want %d, %v, ok=%v", tc.in, v, isMax, err, tc.v, tc.isMax, tc.ok)
		}
	}
}

func TestParsePids(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true}, {"1\n22\n333\n", []int{1, 22, 333}, true}, {"\n7\n\n", []int{7}, true},
		{"0\n", nil, false}, {"-3\n", nil, false}, {"x\n", nil, false}, {"99999999999\n", nil, false},
	} {
		got, err := parsePids([]byte(tc.in))
		if tc.ok != (err == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("parsePids(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// The fuzz targets check that the parsers never panic, that what they
// accept is well formed, and that re-formatting an accepted input parses
// to the same result. Seeds live in testdata/fuzz.

func FuzzParseFlatKeyed(f *testing.F) {
	f.Add([]byte("usage_usec 10\nuser_usec 6\nsystem_usec 4\n"))
	f.Add([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := parseFlatKeyed(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		var b strings.Builder
		for k, v := range kv {
			if v < 0 || k == "" || strings.ContainsAny(k, " \t\n") {
				t.Fatalf("accepted bad entry %q=%d", k, v)
			}
			fmt.Fprintf(&b, "%s %d\n", k, v)
		}
		again, err := parseFlatKeyed([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, kv) {
			t.Fatalf("round trip: %v, %v; want %v", again, err, kv)
		}
	})
}

func FuzzParseSingle(f *testing.F) {
	f.Add([]byte("max\n"))
	f.Add([]byte("4096\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, isMax, err := parseSingle(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if isMax != (v == -1) || (!isMax && v < 0) {
			t.Fatalf("parseSingle(%q) = %d, max=%v", data, v, isMax)
		}
	})
}

func FuzzParsePids(f *testing.F) {
	f.Add([]byte("1\n2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pids, err := parsePids(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("accepted pid %d", p)
			}
		}
	})
}
