package install

import (
	"errors"
	"reflect"
	"testing"
)

func TestEncodeDecode(t *testing.T) {
	prog := []Instruction{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000}}
	b := Encode(prog)
	if len(b) != 24 {
		t.Fatalf("Encode: %d bytes, want 24", len(b))
	}
	// struct sock_filter, little-endian: code, jt, jf, k.
	if want := []byte{0x15, 0, 1, 2, 0x3e, 0, 0, 0xc0}; !reflect.DeepEqual(b[8:16], want) {
		t.Fatalf("second instruction encoded as % x, want % x", b[8:16], want)
	}
	got, err := Decode(b)
	if err != nil || !reflect.DeepEqual(got, prog) {
		t.Fatalf("Decode(Encode(p)) = %v, %v; want %v", got, err, prog)
	}
	for _, bad := range [][]byte{nil, make([]byte, 7), make([]byte, 8*4097)} {
		if _, err := Decode(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%d bytes) = %v, want ErrMalformed", len(bad), err)
		}
	}
}
