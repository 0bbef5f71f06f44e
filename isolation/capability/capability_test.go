package capability

import (
	"errors"
	"strings"
	"testing"
)

const statusFull = "Name:\tsh\nUmask:\t0022\nCapInh:\t0000000000000000\nCapPrm:\t00000000000000e0\nCapEff:\t00000000000000e0\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n"

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    State
		wantErr bool
	}{
		{"full", statusFull, State{Permitted: Of(Kill, SetGID, SetUID), Effective: Of(Kill, SetGID, SetUID), Bounding: 0x1ffffffffff}, false},
		{"missing ambient", strings.Replace(statusFull, "CapAmb", "CapXyz", 1), State{}, true},
		{"twice", statusFull + "CapEff:\t0\n", State{}, true},
		{"not hex", strings.Replace(statusFull, "00000000000000e0", "zz", 1), State{}, true},
		{"over 64 bits", strings.Replace(statusFull, "000001ffffffffff", "1ffffffffffffffff", 1), State{}, true},
		{"empty", "", State{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(strings.NewReader(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrStatus) {
					t.Fatalf("ParseStatus() error = %v, want ErrStatus", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ParseStatus() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSet(t *testing.T) {
	s := Of(SetUID, SetGID, Kill)
	if !s.Has(SetUID) || !s.Has(Kill) || s.Has(SetPCap) || s.Has(200) {
		t.Fatalf("Has wrong on %s", s)
	}
	if s.Len() != 3 || s.String() != "00000000000000e0" {
		t.Fatalf("Len/String = %d %s", s.Len(), s)
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add(statusFull)
	f.Add("CapInh:0\nCapPrm:0\nCapEff:0\nCapBnd:0\nCapAmb:0")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ParseStatus(strings.NewReader(in))
		if err != nil && st != (State{}) {
			t.Fatalf("error %v with non-zero state %+v", err, st)
		}
	})
}
