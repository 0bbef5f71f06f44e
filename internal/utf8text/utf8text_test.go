package utf8text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"é€😀", "é€😀"},
		{"a\uFFFDb", "a\uFFFDb"}, // the program's own U+FFFD is text
		{"a\xff\xfeb\xe2\x82c", "a\uFFFDb\uFFFDc"},
		{"\xff", "\uFFFD"},
		{"\xff\xff\xff\xff", "\uFFFD"},
		{"\x80", "\uFFFD"},
		{"a\xe2\x82", "a\uFFFD"},       // cut short at the end
		{"\xc0\xaf", "\uFFFD"},         // overlong
		{"\xed\xa0\x80x", "\uFFFDx"},   // surrogate
		{"\xffé\xff", "\uFFFDé\uFFFD"}, // a valid character ends a run
		{"\xf0\x9f\x98", "\uFFFD"},     // 3 of 4 bytes
		{"\xf0\x9f\x98\x80\xff", "😀\uFFFD"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Bytes([]byte(tc.in)); got != tc.want {
			t.Errorf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
		}
		var d Decoder
		if got := d.Decode([]byte(tc.in)) + d.Flush(); got != tc.want {
			t.Errorf("Decoder(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// decodeChunks runs a Decoder over in cut at the given offsets and
// returns each call's text.
func decodeChunks(in []byte, cuts []int) []string {
	var d Decoder
	var out []string
	prev := 0
	for _, c := range cuts {
		out = append(out, d.Decode(in[prev:c]))
		prev = c
	}
	out = append(out, d.Decode(in[prev:]), d.Flush())
	return out
}

func TestDecoderChunkBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		cuts []int
		want []string // per Decode call, then Flush
	}{
		{"euro split 1+2", "a€b", []int{2}, []string{"a", "€b", ""}},
		{"euro split 2+1", "a€b", []int{3}, []string{"a", "€b", ""}},
		{"emoji byte by byte", "😀", []int{1, 2, 3}, []string{"", "", "", "😀", ""}},
		{"run split", "a\xff\xfeb", []int{2}, []string{"a\uFFFD", "b", ""}},
		{"run split over three", "\xff\xff\xff\xff", []int{1, 2, 3}, []string{"\uFFFD", "", "", "", ""}},
		{"held start proves invalid", "a\xe2(b", []int{2}, []string{"a", "\uFFFD(b", ""}},
		{"held start never completed", "a\xe2\x82", []int{2}, []string{"a", "", "\uFFFD"}},
		{"held start continues a run", "\xff\xe2\x82", []int{2}, []string{"\uFFFD", "", ""}},
		{"run then held start then run", "\xff\xe2\xff", []int{2}, []string{"\uFFFD", "", ""}},
		{"valid after run ends it", "\xffa\xff", []int{2}, []string{"\uFFFDa", "\uFFFD", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeChunks([]byte(tc.in), tc.cuts)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("chunks %q: got %q, want %q", tc.in, got, tc.want)
			}
			if j := strings.Join(got, ""); j != String(tc.in) {
				t.Errorf("joined %q != String %q", j, String(tc.in))
			}
		})
	}
}

func TestDecoderFlushResets(t *testing.T) {
	var d Decoder
	if got := d.Decode([]byte("a\xff")); got != "a\uFFFD" {
		t.Fatalf("Decode = %q", got)
	}
	d.Flush() // a gap: the next run is another run
	if got := d.Decode([]byte("\xfeb")); got != "\uFFFDb" {
		t.Fatalf("Decode after Flush = %q, want a U+FFFD of its own", got)
	}
}

func TestDecoderCut(t *testing.T) {
	var d Decoder
	// A chunk cut on a character boundary, ending in a run the next
	// chunk goes on: one U+FFFD, in the first chunk's text.
	if got := d.Decode([]byte("a\xff")) + d.Cut(); got != "a\uFFFD" {
		t.Fatalf("first chunk %q", got)
	}
	if got := d.Decode([]byte("\xfe\xe2\x82")) + d.Cut(); got != "" {
		t.Fatalf("second chunk %q, want nothing: it goes on the run", got)
	}
	if got := d.Decode([]byte("b\xe2\x82")) + d.Cut(); got != "b\uFFFD" {
		t.Fatalf("third chunk %q: a held character is U+FFFD at the cut", got)
	}
	if got := d.Decode([]byte("c")) + d.Cut(); got != "c" {
		t.Fatalf("fourth chunk %q", got)
	}
}

// FuzzDecoder checks the Decoder's rule: wherever a stream is cut, the
// text of its chunks joined is String of the stream, valid UTF-8, and no
// Decode call returns invalid UTF-8 or holds more than 3 bytes.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("a\xff\xfeb\xe2\x82c"), uint8(3), uint8(1))
	f.Add([]byte("😀€é\xf0\x9f"), uint8(2), uint8(5))
	f.Fuzz(func(t *testing.T, in []byte, a, b uint8) {
		c1, c2 := min(int(a), len(in)), min(int(b), len(in))
		if c1 > c2 {
			c1, c2 = c2, c1
		}
		var d Decoder
		var sb strings.Builder
		for _, p := range [][]byte{in[:c1], in[c1:c2], in[c2:]} {
			s := d.Decode(p)
			if !utf8.ValidString(s) {
				t.Fatalf("Decode returned invalid %q", s)
			}
			if d.n >= utf8.UTFMax {
				t.Fatalf("holds %d bytes", d.n)
			}
			sb.WriteString(s)
		}
		sb.WriteString(d.Flush())
		if got, want := sb.String(), String(string(in)); got != want {
			t.Fatalf("%q cut at %d, %d: joined %q, String %q", in, c1, c2, got, want)
		}
	})
}
