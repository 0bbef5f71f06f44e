package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadStreamsIndependent(t *testing.T) {
	e := newExec(t, 0)
	e.Write(Stdout, []byte("hello "))
	e.Write(Stderr, []byte("E1"))
	e.Write(Stdout, []byte("world"))
	e.Write(Stderr, []byte("E2"))
	tests := []struct {
		stream   Stream
		off      int64
		want     string
		wantNext int64
	}{
		{Stdout, 0, "hello world", 11},
		{Stdout, 6, "world", 11},
		{Stderr, 0, "E1E2", 4},
		{Stderr, 2, "E2", 4},
		{Stderr, 6, "", 4},
		{Stdout, 11, "", 11},
		{Stdout, 100, "", 11},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v@%d", tt.stream, tt.off), func(t *testing.T) {
			got, next, gap := mustRead(t, e, tt.stream, tt.off)
			if got != tt.want || next != tt.wantNext || gap {
				t.Errorf("Read(%v,%d) = %q,%d,%v; want %q,%d,false", tt.stream, tt.off, got, next, gap, tt.want, tt.wantNext)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	e := newExec(t, 0)
	if _, _, _, err := e.Read(Stdout, -1); !errors.Is(err, ErrInvalidOffset) {
		t.Errorf("negative offset: %v, want ErrInvalidOffset", err)
	}
	if _, _, _, err := e.Read(Stream(2), 0); !errors.Is(err, ErrInvalidStream) {
		t.Errorf("bad stream: %v, want ErrInvalidStream", err)
	}
}

func TestReadUTF8(t *testing.T) {
	euro := "€"  // E2 82 AC
	smile := "😀" // F0 9F 98 80
	tests := []struct {
		name     string
		writes   []string
		finish   bool
		off      int64
		want     string
		wantNext int64
	}{
		{"offset at rune start", []string{"a" + euro + "b"}, false, 1, euro + "b", 5},
		{"offset inside 3-byte rune (2nd byte)", []string{"a" + euro + "b"}, false, 2, "b", 5},
		{"offset inside 3-byte rune (3rd byte)", []string{"a" + euro + "b"}, false, 3, "b", 5},
		{"offset inside 4-byte rune (2nd byte)", []string{"a" + smile + "b"}, false, 2, "b", 6},
		{"offset inside 4-byte rune (4th byte)", []string{"a" + smile + "b"}, false, 4, "b", 6},
		{"offset inside last rune", []string{"a" + smile}, false, 3, "", 5},
		{"write ends mid 3-byte rune, running", []string{"a" + euro[:2]}, false, 0, "a", 1},
		{"write ends mid 4-byte rune, running", []string{"ab" + smile[:3]}, false, 0, "ab", 2},
		{"rune completed by next write", []string{"a" + euro[:1], euro[1:] + "z"}, false, 0, "a" + euro + "z", 5},
		{"held-back offset asked again", []string{"a" + euro[:2]}, false, 1, "", 1},
		{"mid-rune write, terminal returns all", []string{"a" + euro[:2]}, true, 0, "a" + euro[:2], 3},
		{"stray continuation bytes kept", []string{"\x80\x80a"}, false, 0, "\x80\x80a", 3},
		{"invalid lead then ascii", []string{"\xe2a"}, false, 0, "\xe2a", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, 0)
			for _, w := range tt.writes {
				e.Write(Stdout, []byte(w))
			}
			if tt.finish {
				e.Finish(completed())
			}
			got, next, gap := mustRead(t, e, Stdout, tt.off)
			if got != tt.want || next != tt.wantNext || gap {
				t.Errorf("Read(%d) = %q,%d,%v; want %q,%d,false", tt.off, got, next, gap, tt.want, tt.wantNext)
			}
		})
	}
}

// model is the expected content of a truncated ASCII stream.
func model(all string, capBytes int) (head, tail string) {
	if len(all) <= capBytes {
		return all, ""
	}
	h := capBytes / 2
	return all[:h], all[len(all)-(capBytes-h):]
}

func TestTruncation(t *testing.T) {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	tests := []struct {
		name   string
		cap    int64
		chunks []int
	}{
		{"exactly cap", 10, []int{10}},
		{"one write past cap", 10, []int{25}},
		{"small writes wrap ring", 10, []int{3, 3, 3, 3, 3, 3, 3, 3, 3}},
		{"write larger than tail", 10, []int{4, 20, 2}},
		{"odd cap", 7, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"cap 1", 1, []int{2, 1, 5}},
		{"cap 2", 2, []int{1, 1, 1}},
		{"many wraps", 12, []int{5, 7, 11, 13, 1, 2, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, tt.cap)
			var all strings.Builder
			for i, n := range tt.chunks {
				for j := range n {
					all.WriteByte(alphabet[(i*7+j)%len(alphabet)])
				}
				e.Write(Stdout, []byte(all.String()[all.Len()-n:]))
			}
			total := int64(all.Len())
			head, tail := model(all.String(), int(tt.cap))
			truncated := total > tt.cap
			got, next, gap := mustRead(t, e, Stdout, 0)
			if got != head+tail || next != total || gap != truncated {
				t.Fatalf("Read(0) = %q,%d,%v; want %q,%d,%v", got, next, gap, head+tail, total, truncated)
			}
			st := e.Output(Stdout)
			wantDropped := max(total-tt.cap, 0)
			if st.WrittenBytes != total || st.DroppedBytes != wantDropped || st.KeptBytes != min(total, tt.cap) || st.Truncated != truncated {
				t.Errorf("Output = %+v; want written %d dropped %d", st, total, wantDropped)
			}
			if truncated {
				// Every offset in the dropped middle starts at the oldest kept byte.
				for off := st.HeadBytes; off < st.TailStart; off++ {
					if got, next, gap := mustRead(t, e, Stdout, off); got != tail || next != total || !gap {
						t.Errorf("Read(%d) = %q,%d,%v; want %q,%d,true", off, got, next, gap, tail, total)
					}
				}
				for off := st.TailStart; off <= total; off++ {
					want := all.String()[off:]
					if got, _, gap := mustRead(t, e, Stdout, off); got != want || gap {
						t.Errorf("Read(%d) = %q,%v; want %q,false", off, got, gap, want)
					}
				}
			}
			e.Finish(completed())
			res, _ := e.Result()
			if res.StdoutTruncated != truncated || res.StdoutBytes != total || res.StderrTruncated {
				t.Errorf("result truncated %v bytes %d", res.StdoutTruncated, res.StdoutBytes)
			}
		})
	}
}

func TestReadAcrossGapUTF8(t *testing.T) {
	// cap 10: head keeps bytes [0,5), tail the last 5. In "a€€€€€€€b" (23
	// bytes) the head ends one byte into the second € and the tail starts on
	// the last byte of the sixth €: both partial runes are cut.
	tests := []struct {
		name      string
		data      string
		cap       int64
		finish    bool
		off       int64
		want      string
		wantGap   bool
		wantValid bool
	}{
		{"head and tail split mid-rune", "a€€€€€€€b", 10, false, 0, "a" + "€" + "€b", true, true},
		{"head and tail split mid-rune, terminal", "a€€€€€€€b", 10, true, 0, "a" + "€" + "€b", true, true},
		{"4-byte runes", "😀😀😀😀😀😀", 10, true, 0, "😀😀", true, true},
		{"offset inside head rune", "a€€€€€€€b", 10, false, 2, "€b", true, true},
		{"offset in gap, tail starts mid-rune", "a€€€€€€€b", 10, false, 7, "€b", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, tt.cap)
			e.Write(Stdout, []byte(tt.data))
			if tt.finish {
				e.Finish(completed())
			}
			got, next, gap := mustRead(t, e, Stdout, tt.off)
			if got != tt.want || gap != tt.wantGap || next != int64(len(tt.data)) {
				t.Errorf("Read(%d) = %q,%d,%v; want %q,%d,%v", tt.off, got, next, gap, tt.want, len(tt.data), tt.wantGap)
			}
			if utf8.ValidString(got) != tt.wantValid {
				t.Errorf("valid UTF-8 = %v", !tt.wantValid)
			}
		})
	}
}
